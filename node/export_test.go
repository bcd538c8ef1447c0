package node

// What the external tests (package node_test) read of the counters.

const Stripes = stripes

// DispatchTotals are the node-wide counts: commands, bytes in, bytes out,
// error replies.
func (n *Node) DispatchTotals() [4]int64 { return n.dispatch.totals() }

// CommandTotals are a command's counts: calls, ns, rejected, failed.
func (n *Node) CommandTotals(name string) [4]int64 {
	return n.perCmd[n.table.Find([]byte(name)).Index].totals()
}
