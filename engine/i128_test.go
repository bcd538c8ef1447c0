package engine

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func (a i128) big() *big.Int {
	b := new(big.Int).SetInt64(a.hi)
	b.Lsh(b, 64)
	return b.Add(b, new(big.Int).SetUint64(a.lo))
}

func TestI128AgainstBig(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	vals := []i128{i128FromI64(0), i128FromI64(-1), i128FromI64(math.MinInt64), i128FromI64(math.MaxInt64), i128FromU64(math.MaxUint64)}
	for i := 0; i < 200; i++ {
		if i%2 == 0 {
			vals = append(vals, i128FromI64(int64(r.Uint64())))
		} else {
			vals = append(vals, i128FromU64(r.Uint64()))
		}
	}
	for _, a := range vals {
		for _, b := range vals[:40] {
			require.Equal(t, new(big.Int).Add(a.big(), b.big()).String(), a.add(b).big().String())
			require.Equal(t, new(big.Int).Sub(a.big(), b.big()).String(), a.sub(b).big().String())
			require.Equal(t, a.big().Cmp(b.big()), a.cmp(b))
		}
		for _, d := range []int64{1000, 1_000_000, 1_000_000_000} {
			q, rm := a.quoRem(d)
			bq, br := new(big.Int).QuoRem(a.big(), big.NewInt(d), new(big.Int))
			if bq.IsInt64() {
				require.Equal(t, bq.Int64(), q)
				require.Equal(t, br.Int64(), rm)
			}
		}
	}
}

func TestU128ToFloat(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 100000; i++ {
		hi, lo := r.Uint64()>>uint(r.IntN(64)), r.Uint64()
		want, _ := new(big.Float).SetInt(i128{hi: int64(hi >> 1), lo: lo}.big()).Float64()
		require.Equal(t, want, u128ToFloat(hi>>1, lo))
	}
	// Exact halfway cases round to even.
	require.Equal(t, float64(1<<53), u128ToFloat(0, 1<<53+1))
}

func TestF64ToI64(t *testing.T) {
	require.Equal(t, int64(0), f64ToI64(math.NaN()))
	require.Equal(t, int64(math.MaxInt64), f64ToI64(math.Inf(1)))
	require.Equal(t, int64(math.MinInt64), f64ToI64(math.Inf(-1)))
	require.Equal(t, int64(-2), f64ToI64(-2.9))
	require.Equal(t, int64(math.MaxInt64), f64ToI64(1e19))
}
