package commands

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
// fetch together) wherever the array starts. The cells are also kept a
// cell's length away from the fields around them (a Command's Run and
// Sub, which every loop reads on every command): cell 0 written next to
// them would make loop 0 take that line from every other loop.
const cellBytes = 128

// A cell holds four counts of the clients of one stripe: for the server
// (dispatchStats) commands processed, bytes in and out, error replies; for
// a command (cmdStats) its calls, their time in ns, rejected and failed
// calls.
type cell struct {
	n [4]atomic.Int64
	_ [cellBytes - 4*8]byte
}

// Which count of a cell is which.
const (
	nCommands, nNetIn, nNetOut, nErrorReplies = 0, 1, 2, 3 // dispatchStats
	nCalls, nNs, nRejected, nFailed           = 0, 1, 2, 3 // cmdStats
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

// dispatchStats are the server-wide counts every command updates (INFO
// stats), cmdStats one command's (INFO commandstats).
type (
	dispatchStats = stripedCounts
	cmdStats      = stripedCounts
)
