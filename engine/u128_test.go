package engine

import (
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func (a u128) big() *big.Int {
	b := new(big.Int).SetUint64(a.hi)
	b.Lsh(b, 64)
	return b.Add(b, new(big.Int).SetUint64(a.lo))
}

func TestU128AgainstBig(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	max := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 128), big.NewInt(1))
	for i := 0; i < 20000; i++ {
		a := u128{r.Uint64() >> uint(r.IntN(64)), r.Uint64()}
		b := u128{r.Uint64() >> uint(r.IntN(64)), r.Uint64()}
		if r.IntN(4) == 0 {
			a.hi = 0
		}
		m, d := r.Uint64()>>uint(r.IntN(64)), r.Uint64()>>uint(r.IntN(64))|1
		// add, sub
		sum := new(big.Int).Add(a.big(), b.big())
		if sum.Cmp(max) > 0 {
			sum = max
		}
		require.Equal(t, sum.String(), a.add(b).big().String())
		diff := new(big.Int).Sub(a.big(), b.big())
		if diff.Sign() < 0 {
			diff.SetInt64(0)
		}
		require.Equal(t, diff.String(), a.sub(b).big().String())
		require.Equal(t, a.big().Cmp(b.big()) < 0, a.less(b))
		// mulDivCeil
		p := new(big.Int).Mul(a.big(), new(big.Int).SetUint64(m))
		q, rem := new(big.Int).QuoRem(p, new(big.Int).SetUint64(d), new(big.Int))
		if rem.Sign() != 0 {
			q.Add(q, big.NewInt(1))
		}
		if q.Cmp(max) > 0 {
			q = max
		}
		got, _ := a.mulDivCeilOK(m, d)
		if new(big.Int).Rsh(p, 64).Cmp(new(big.Int).SetUint64(d)) < 0 || q.Cmp(max) == 0 {
			require.Equal(t, q.String(), got.big().String())
		}
		// divCeil, divFloor
		fq, frem := new(big.Int).QuoRem(a.big(), new(big.Int).SetUint64(d), new(big.Int))
		if fq.IsUint64() {
			require.Equal(t, fq.Uint64(), a.divFloor(d))
			c := fq.Uint64()
			if frem.Sign() != 0 && c != ^uint64(0) {
				c++
			}
			require.Equal(t, c, a.divCeil(d))
		} else {
			require.Equal(t, ^uint64(0), a.divFloor(d))
		}
	}
}
