package replication

import (
	"fmt"
	"strconv"
	"time"
)

// Field is one INFO line, name:value.
type Field struct{ Name, Value string }

// Stats are the sync counters of INFO stats.
type Stats struct{ Full, PartialOK, PartialErr int64 }

// Stats returns the sync counters (sync_full, sync_partial_ok,
// sync_partial_err) of the replicas this node has served.
func (m *Manager) Stats() Stats {
	return Stats{m.syncFull.Load(), m.syncPartialOK.Load(), m.syncPartialErr.Load()}
}

// ResetStats zeroes them (CONFIG RESETSTAT).
func (m *Manager) ResetStats() {
	m.syncFull.Store(0)
	m.syncPartialOK.Store(0)
	m.syncPartialErr.Store(0)
}

// Info returns INFO replication's fields in Redis 7's order
// (docs/replication.md, "What it reports"). priority is slave_priority.
func (m *Manager) Info(priority int) []Field {
	m.mu.Lock()
	defer m.mu.Unlock()
	var fs []Field
	add := func(name string, v any) { fs = append(fs, Field{name, fmt.Sprint(v)}) }
	if u := m.up; u == nil {
		add("role", "master")
	} else {
		add("role", "slave")
		add("master_host", u.host)
		add("master_port", u.port)
		status := "down"
		if u.state == stateConnected {
			status = "up"
		}
		add("master_link_status", status)
		lastIO := int64(-1)
		if u.state == stateConnected {
			lastIO = int64(time.Since(u.lastIO) / time.Second)
		}
		add("master_last_io_seconds_ago", lastIO)
		syncing := u.state == stateSync
		add("master_sync_in_progress", b2i(syncing))
		add("slave_read_repl_offset", m.offset)
		add("slave_repl_offset", m.offset)
		if syncing {
			// The full sync streams without announcing its size, as
			// Redis's diskless one does: the total is -1.
			add("master_sync_total_bytes", -1)
			add("master_sync_read_bytes", u.syncRead)
			add("master_sync_left_bytes", -1-u.syncRead)
			add("master_sync_perc", "0.00")
			add("master_sync_last_io_seconds_ago", 0)
		}
		if u.state != stateConnected {
			down := int64(-1)
			if !u.downSince.IsZero() {
				down = int64(time.Since(u.downSince) / time.Second)
			}
			add("master_link_down_since_seconds", down)
		}
		add("slave_priority", priority)
		add("slave_read_only", 1)
		add("replica_announced", 1)
	}
	add("connected_slaves", len(m.links))
	for i, l := range m.links {
		state, lag := "wait_bgsave", int64(0)
		if l.online {
			state, lag = "online", int64(time.Since(l.ackAt)/time.Second)
		}
		add("slave"+strconv.Itoa(i), fmt.Sprintf("ip=%s,port=%d,state=%s,offset=%d,lag=%d",
			l.ip, l.port, state, l.ack, lag))
	}
	add("master_failover_state", m.failoverStateLocked())
	add("master_replid", m.replid)
	add("master_replid2", m.replid2)
	add("master_repl_offset", m.offset)
	add("second_repl_offset", m.second)
	if m.bl == nil {
		add("repl_backlog_active", 0)
		add("repl_backlog_size", m.o.BacklogSize)
		add("repl_backlog_first_byte_offset", 0)
		add("repl_backlog_histlen", 0)
	} else {
		add("repl_backlog_active", 1)
		add("repl_backlog_size", m.bl.size())
		add("repl_backlog_first_byte_offset", m.bl.first)
		add("repl_backlog_histlen", m.bl.histlen())
	}
	return fs
}

// Role is ROLE's reply before encoding.
type Role struct {
	Replica bool
	// A primary: its offset and its online replicas.
	Offset   int64
	Replicas []Replica
	// A replica: its primary, the link's state and its offset (-1 while
	// the link is not live).
	Host  string
	Port  int
	State string
}

// Role returns what ROLE reports.
func (m *Manager) Role() Role {
	m.mu.Lock()
	defer m.mu.Unlock()
	if u := m.up; u != nil {
		off := int64(-1)
		if u.state == stateConnected {
			off = m.offset
		}
		return Role{Replica: true, Host: u.host, Port: u.port, State: u.state, Offset: off}
	}
	r := Role{Offset: m.offset}
	for _, l := range m.links {
		if l.online {
			r.Replicas = append(r.Replicas, Replica{IP: l.ip, Port: l.port, Offset: l.ack})
		}
	}
	return r
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Failures is what metrics report of a replica's failed links since the
// start: the units of its primary's stream it refused (none of such a
// unit is applied), and the full syncs that failed (cut short, or data
// it refused). A primary's are those of its time as a replica.
func (m *Manager) Failures() (refusedUnits, failedSyncs int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.refusedUnits, m.failedSyncs
}

// Lag is what metrics report of replication: this node's offset; on a
// replica, how long since its primary last sent anything (-1 while the
// link is down), on a primary the longest any online replica has gone
// without acknowledging; and the online replicas.
func (m *Manager) Lag() (offset int64, lag time.Duration, replicas int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if u := m.up; u != nil {
		lag = -1
		if u.state == stateConnected {
			lag = time.Since(u.lastIO)
		}
		return m.offset, lag, 0
	}
	for _, l := range m.links {
		if l.online {
			replicas++
			lag = max(lag, time.Since(l.ackAt))
		}
	}
	return m.offset, lag, replicas
}
