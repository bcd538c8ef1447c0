package node

import "sync/atomic"

// stripes is how many cells the per-command counters spread their updates
// over (a power of two). Every command adds to several counters; were they
// single atomics, the event loops on different cores would pass their
// cache lines back and forth on every command, and two cores ran PING
// slower than one (BenchmarkDispatchParallel). A client counts in the
// cell of the event loop that serves it (Client.SetStripe), so loops write
// lines of their own; INFO adds the cells up. With more loops than cells,
// loop i shares cell i mod stripes.
const stripes = 16

// A cell is 128 bytes, two cache lines, so that neighbouring cells' counters
// never share a line (or the pair of lines that adjacent-line prefetchers
// fetch together) wherever the array starts. Each stripedCounts is padded
// by a cell's length on both sides, so that its cell 0 never shares a line
// with the fields around it either.
const cellBytes = 128

// A cell holds four counts of the clients of one stripe: for the node
// (Node.dispatch) commands processed, bytes in and out, error replies; for
// a command (Node.perCmd) its calls, their time in ns, rejected and failed
// calls.
type cell struct {
	n [4]atomic.Int64
	_ [cellBytes - 4*8]byte
}

// Which count of a cell is which.
const (
	nCommands, nNetIn, nNetOut, nErrorReplies = 0, 1, 2, 3 // Node.dispatch
	nCalls, nNs, nRejected, nFailed           = 0, 1, 2, 3 // Node.perCmd
)

// stripedCounts are four counts kept in stripes: cell(stripe) is a
// client's, and readers add the cells up.
type stripedCounts struct {
	_     [cellBytes]byte
	cells [stripes]cell
	_     [cellBytes]byte
}

func (c *stripedCounts) cell(stripe uint32) *[4]atomic.Int64 { return &c.cells[stripe].n }

// totals adds the cells up.
func (c *stripedCounts) totals() (t [4]int64) {
	for i := range c.cells {
		for j := range t {
			t[j] += c.cells[i].n[j].Load()
		}
	}
	return t
}

func (c *stripedCounts) reset() {
	for i := range c.cells {
		for j := range c.cells[i].n {
			c.cells[i].n[j].Store(0)
		}
	}
}
