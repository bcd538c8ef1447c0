package rls

import (
	"context"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"
)

// forwarder sends RL.ALL calls to the node that owns their keys, in
// cluster mode: a client per node address, over the nodes' RESP ports
// (the addresses MOVED names). A node never decides for keys it does not
// own.
type forwarder struct {
	mu      sync.Mutex
	clients map[string]*redis.Client
	// password authenticates to the other nodes (masterauth).
	password string
}

func newForwarder(password string) *forwarder {
	return &forwarder{clients: map[string]*redis.Client{}, password: password}
}

func (f *forwarder) client(addr string) *redis.Client {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.clients[addr]
	if c == nil {
		c = redis.NewClient(&redis.Options{Addr: addr, Password: f.password, MaxRetries: -1, Protocol: 2, DisableIdentity: true})
		f.clients[addr] = c
	}
	return c
}

func (f *forwarder) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for a, c := range f.clients {
		c.Close()
		delete(f.clients, a)
	}
}

// do runs args on the node at addr and reads its RL.ALL reply.
func (f *forwarder) do(ctx context.Context, addr string, args [][]byte) ([]result, error) {
	a := make([]any, len(args))
	for i, b := range args {
		a[i] = string(b)
	}
	v, err := f.client(addr).Do(ctx, a...).Result()
	if err != nil {
		return nil, err
	}
	top, ok := v.([]any)
	if !ok || len(top) != 7 {
		return nil, fmt.Errorf("%w from %s", errReply, addr)
	}
	ints := make([]int64, 0, 6+5*4)
	for _, x := range top[:6] {
		n, ok := x.(int64)
		if !ok {
			return nil, fmt.Errorf("%w from %s", errReply, addr)
		}
		ints = append(ints, n)
	}
	per, _ := top[6].([]any)
	sizes := []int{7, len(per)}
	for _, p := range per {
		l, _ := p.([]any)
		sizes = append(sizes, len(l))
		for _, x := range l {
			n, ok := x.(int64)
			if !ok && x != nil { // nil: a LEASE group's missing token
				return nil, fmt.Errorf("%w from %s", errReply, addr)
			}
			ints = append(ints, n)
		}
	}
	return parseResults(nil, ints, sizes)
}
