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

// dispatchCell holds the server-wide counts that every command updates.
type dispatchCell struct {
	commands, netIn, netOut, errorReplies atomic.Int64
	_                                     [cellBytes - 4*8]byte
}

// dispatchStats are the server-wide per-command counts (INFO stats), in
// stripes: cell(stripe) is a client's.
type dispatchStats struct {
	_     [cellBytes]byte
	cells [stripes]dispatchCell
	_     [cellBytes]byte
}

func (d *dispatchStats) cell(stripe uint32) *dispatchCell { return &d.cells[stripe] }

// totals adds the cells up.
func (d *dispatchStats) totals() (commands, netIn, netOut, errorReplies int64) {
	for i := range d.cells {
		c := &d.cells[i]
		commands += c.commands.Load()
		netIn += c.netIn.Load()
		netOut += c.netOut.Load()
		errorReplies += c.errorReplies.Load()
	}
	return
}

func (d *dispatchStats) reset() {
	for i := range d.cells {
		c := &d.cells[i]
		c.commands.Store(0)
		c.netIn.Store(0)
		c.netOut.Store(0)
		c.errorReplies.Store(0)
	}
}

// cmdCell holds one command's counts (INFO commandstats) from the clients
// of one stripe.
type cmdCell struct {
	calls, ns, rejected, failed atomic.Int64
	_                           [cellBytes - 4*8]byte
}

// cmdStats are one command's counts, in stripes: cell(stripe) is a
// client's.
type cmdStats struct {
	_     [cellBytes]byte
	cells [stripes]cmdCell
	_     [cellBytes]byte
}

func (s *cmdStats) cell(stripe uint32) *cmdCell { return &s.cells[stripe] }

// totals adds the cells up.
func (s *cmdStats) totals() (calls, ns, rejected, failed int64) {
	for i := range s.cells {
		c := &s.cells[i]
		calls += c.calls.Load()
		ns += c.ns.Load()
		rejected += c.rejected.Load()
		failed += c.failed.Load()
	}
	return
}

func (s *cmdStats) reset() {
	for i := range s.cells {
		c := &s.cells[i]
		c.calls.Store(0)
		c.ns.Store(0)
		c.rejected.Store(0)
		c.failed.Store(0)
	}
}
