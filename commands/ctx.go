package commands

import (
	"log/slog"
	"time"

	"github.com/rlserver/rlserver/acl"
	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/engine"
)

// Node is what the handlers need of the node they run on: its sessions,
// configuration, statistics, snapshots and lifecycle. The node package
// implements it; handlers parse their arguments, ask the node and reply.
type Node interface {
	Shards() int
	Clock() clock.Clock
	Commands() Table
	Logger() *slog.Logger
	// Users and permissions (docs/protocol.md, "Users and permissions").
	// ACLCatalog is what the users' rules know of the table. User finds
	// a user by name (nil: none; "default" always exists), Users lists
	// them by name. Authenticate returns the user that user and pass
	// log in as, nil if they do not (no such user, a user that is off, a
	// wrong password), and then logs the failure (ACL LOG) as s's, with
	// cmd, the command as the client spelled it (AUTH, HELLO). SetUser creates or changes a user, applying all
	// the rules or none (an *acl.RuleError), and closes its connections
	// subscribed where the rules no longer allow. DeleteUsers deletes
	// users and closes their connections. Connections closed are s's
	// after its reply. LoadUsers and
	// SaveUsers read and write the ACL file.
	ACLCatalog() *acl.Catalog
	User(name string) *acl.User
	Users() []*acl.User
	Authenticate(s *Session, cmd, user, pass []byte) *acl.User
	// ACLLog returns up to count of the ACL log's entries, newest
	// first; ACLLogReset empties it.
	ACLLog(count int) []ACLLogEntry
	ACLLogReset()
	SetUser(s *Session, name string, rules []string) error
	DeleteUsers(s *Session, names []string) int
	LoadUsers(s *Session) error
	SaveUsers() error
	// Sessions lists the connected clients by ID, those being killed left
	// out.
	Sessions() []*Session
	// Info renders INFO for the section arguments, reading the keyspace
	// through st (inside EXEC every shard is locked already).
	Info(sections [][]byte, now int64, st engine.Store) string
	// ConfigParams are CONFIG GET's and CONFIG SET's parameters.
	ConfigParams() []ConfigParam
	ResetStats()
	// Save, BackgroundSave and LastSave answer ErrPersistOff (LastSave:
	// the start time) when the node runs in memory only.
	Persistent() bool
	Save() error
	BackgroundSave() error
	LastSave() int64
	RequestShutdown(save, now bool)
	// Replication (docs/replication.md). ReplicaOf follows host:port
	// (already: it did), ReplicaOfNoOne promotes; Role is ROLE's reply;
	// Psync hands s's connection to replication once this command's
	// reply (none) is written; Wait is WAIT; KillPrimaryLink and
	// KillReplicaLinks are CLIENT KILL TYPE master and replica.
	ReplicaOf(s *Session, host string, port int) (already bool, err error)
	ReplicaOfNoOne(s *Session) error
	Role() Role
	Psync(s *Session, replid string, offset int64, failover bool) error
	// Failover is FAILOVER: it answers once the failover has begun.
	Failover(s *Session, a FailoverArgs) error
	// Pause is CLIENT PAUSE (all: every command, else the writes, for
	// d); Unpause is CLIENT UNPAUSE.
	Pause(s *Session, d time.Duration, all bool)
	Unpause()
	Wait(s *Session, replicas int, timeout time.Duration) (now int, later func(gone <-chan struct{}) int, err error)
	// Subscribe and Unsubscribe register the session as a subscriber of
	// a channel (or pattern), or no longer; Publish delivers a message to
	// every subscriber and returns how many received it. A subscriber
	// that is s itself gets its message in w, before the reply.
	// RewriteConfig is CONFIG REWRITE.
	RewriteConfig(s *Session) error
	// Track sets s's client-side caching mode (CLIENT TRACKING; off is
	// the zero Tracking); ClientExists reports whether a connection has
	// the client ID (REDIRECT's check).
	Track(s *Session, t Tracking)
	ClientExists(id int64) bool
	Subscribe(s *Session, channel string, pattern bool)
	Unsubscribe(s *Session, channel string, pattern bool)
	Publish(s *Session, w Writer, channel, message []byte) int
	// PubsubChannels returns the channels with a subscriber whose names
	// match the glob pattern (all for nil); PubsubNumSub counts a
	// channel's subscribers (not its patterns'); PubsubNumPat counts the
	// patterns subscribed, each once.
	PubsubChannels(pattern []byte) []string
	PubsubNumSub(channel []byte) int
	PubsubNumPat() int
	KillPrimaryLink() int
	KillReplicaLinks() int
	// Cluster is the node's view of the cluster, nil outside cluster
	// mode (docs/cluster.md). ClusterHandOff gives the slots to the node
	// with id (its CLUSTER HANDOFF) and returns their records, encoded.
	Cluster() *cluster.Cluster
	ClusterHandOff(s *Session, id string, slots *[cluster.Slots]bool) ([]byte, error)
	// Observability (docs/protocol.md, "Observability"): the slow log,
	// the latency monitor, the most rejected keys.
	Slowlog(count int) []SlowEntry
	SlowlogLen() int
	SlowlogReset()
	LatencyLatest() []LatencyEvent
	LatencyHistory(event string) []LatencySample
	LatencyReset(events []string) int
	TopRejected(count int) []TopEntry
	// RunQueued runs EXEC's queue for s as one atomic step at now,
	// writing EXEC's array of each command's reply to w, or, if a key s
	// watches has changed (Session.Watched), a null array and nothing
	// run.
	RunQueued(s *Session, queue [][][]byte, w Writer, now int64)
}

// Role is ROLE's reply: a primary's offset and online replicas, or a
// replica's primary, link state and offset (-1 while the link is down).
type Role struct {
	Replica  bool
	Offset   int64
	Replicas []RoleReplica
	Host     string
	Port     int
	State    string
}

// RoleReplica is a replica in a primary's ROLE.
type RoleReplica struct {
	IP     string
	Port   int
	Offset int64
}

// ConfigParam is one CONFIG GET/SET parameter. Set is nil for a parameter
// that cannot change at run time; its error says why a value is refused.
type ConfigParam struct {
	Name string
	Get  func() string
	Set  func(v string) error
}

// Ctx is what a handler sees: the node, the session, the reply writer, the
// request, the clock reading for this command and the keyspace. Args
// (name included) are valid only until the handler returns.
type Ctx struct {
	N     Node
	C     *Session
	W     Writer
	Args  [][]byte
	Now   int64 // server clock, Unix ns, read once for this command
	Store engine.Store
	fail  bool
	// decision is what a limiter decided (Decide), for the node.
	decision  Decision
	decided   bool
	decisions []Decision // several (RL.ALL), owned by the session
}

// Error writes err as an error reply (mapped to Redis wording) and marks
// the command failed for INFO commandstats.
func (x *Ctx) Error(err error) {
	x.fail = true
	x.W.Error(errorReply(err))
}

// Failed reports whether the handler replied with an error.
func (x *Ctx) Failed() bool { return x.fail }

// OK writes +OK.
func (x *Ctx) OK() { x.W.Simple("OK") }
