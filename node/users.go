package node

import (
	"errors"
	"os"
	"sort"
	"sync"

	"github.com/rlserver/rlserver/acl"
	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/configfile"
)

// The node's users (docs/protocol.md, "Users and permissions"): who may
// log in, and what each may run. The rules and their language are
// package acl's; the node keeps the users by name, checks every command
// against its connection's user (dispatch.go, resolve), and closes the
// connections of a user that goes.

// userSet is the users by name; the default user is always one of them.
type userSet struct {
	mu     sync.Mutex
	byName map[string]*acl.User
}

// initUsers sets up the catalog and the default user: "on nopass ~* &*
// +@all", with requirepass as its password if set (Redis's
// ACLUpdateDefaultUserPassword).
func (n *Node) initUsers(requirePass string) {
	n.catalog = n.table.ACLCatalog()
	n.defaultUser = acl.NewUser("default", acl.DefaultRules(n.catalog))
	n.users.byName = map[string]*acl.User{"default": n.defaultUser}
	n.setRequirePass(requirePass)
}

// setRequirePass makes pass the default user's only password, or, empty,
// makes it nopass (requirepass, at start and by CONFIG SET).
func (n *Node) setRequirePass(pass string) {
	n.users.mu.Lock()
	defer n.users.mu.Unlock()
	rule := "nopass"
	if pass != "" {
		rule = ">" + pass
	}
	r, err := n.defaultUser.Rules().Apply(n.catalog, "resetpass", rule)
	if err != nil {
		panic(err) // both rules are valid
	}
	n.defaultUser.SetRules(r)
}

// authRequired reports whether a connection that has not logged in may
// run only the commands that need no login: the default user needs a
// password, or is off (Redis's authRequired).
func (n *Node) authRequired() bool {
	r := n.defaultUser.Rules()
	return !r.NoPass() || !r.On()
}

// Unauthenticated reports whether c must still log in: it has not, and
// the default user needs a password or is off. Such a connection runs
// only the commands that need no login, and its requests are held to
// smaller limits (resp.Reader.Unauthenticated).
func (n *Node) Unauthenticated(c *Client) bool { return !c.Authenticated() && n.authRequired() }

// ACLCatalog is what the users' rules know of the command table.
func (n *Node) ACLCatalog() *acl.Catalog { return n.catalog }

// User finds a user by name; nil if there is none.
func (n *Node) User(name string) *acl.User {
	n.users.mu.Lock()
	defer n.users.mu.Unlock()
	return n.users.byName[name]
}

// Users lists the users by name.
func (n *Node) Users() []*acl.User {
	n.users.mu.Lock()
	out := make([]*acl.User, 0, len(n.users.byName))
	for _, u := range n.users.byName {
		out = append(out, u)
	}
	n.users.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// Authenticate returns the user user and pass log in as (AUTH, HELLO
// AUTH), or nil: no such user, a user that is off, a wrong password.
func (n *Node) Authenticate(s *commands.Session, cmd, user, pass []byte) *acl.User {
	u := n.User(string(user))
	if u == nil || !u.Rules().LogsIn(pass) {
		n.logRefusal(s, reasonAuth, string(cmd), string(user))
		return nil
	}
	return u
}

// SetUser creates the user name or changes its rules, applying rules in
// order, all or none (an *acl.RuleError). The user's connections run
// under the new rules from their next command; those subscribed to
// channels the new rules no longer allow are closed, as Redis does (s's
// after its reply).
func (n *Node) SetUser(s *commands.Session, name string, rules []string) error {
	n.users.mu.Lock()
	u := n.users.byName[name]
	base := acl.NewRules(n.catalog)
	if u != nil {
		base = u.Rules()
	}
	r, err := base.Apply(n.catalog, rules...)
	if err != nil {
		n.users.mu.Unlock()
		return err
	}
	if u == nil {
		u = acl.NewUser(name, r)
		n.users.byName[name] = u
	} else {
		u.SetRules(r)
	}
	n.users.mu.Unlock()
	if !r.AllChannels() {
		commands.Kill(n.subscribersRevoked(u, r), s)
	}
	return nil
}

// subscribersRevoked lists the connections of u subscribed to a channel
// or pattern that r does not allow.
func (n *Node) subscribersRevoked(u *acl.User, r *acl.Rules) []*commands.Session {
	seen := map[*Client]bool{}
	var out []*commands.Session
	n.ps.mu.Lock()
	defer n.ps.mu.Unlock()
	for _, pattern := range []bool{false, true} {
		for ch, cs := range n.ps.table(pattern) {
			if r.AllowsSubscription(ch, pattern) {
				continue
			}
			for c := range cs {
				if c.User() == u && !seen[c] {
					seen[c] = true
					out = append(out, c.Session)
				}
			}
		}
	}
	return out
}

// DeleteUsers deletes the users named (never the default user: the
// caller refuses it) and returns how many existed. Their connections are
// closed, s's after its reply; a command of theirs still in flight finds
// the user with no permissions left.
func (n *Node) DeleteUsers(s *commands.Session, names []string) int {
	gone := map[*acl.User]bool{}
	n.users.mu.Lock()
	for _, name := range names {
		if u := n.users.byName[name]; u != nil && u != n.defaultUser {
			delete(n.users.byName, name)
			gone[u] = true
		}
	}
	n.users.mu.Unlock()
	n.closeUsers(s, gone)
	return len(gone)
}

// closeUsers strips the users of their rules and closes their
// connections, s's after its reply.
func (n *Node) closeUsers(s *commands.Session, gone map[*acl.User]bool) {
	if len(gone) == 0 {
		return
	}
	for u := range gone {
		u.SetRules(acl.NewRules(n.catalog))
	}
	var victims []*commands.Session
	for _, c := range n.Sessions() {
		if gone[c.User()] {
			victims = append(victims, c)
		}
	}
	commands.Kill(victims, s)
}

// LoadUsers replaces the users with the ACL file's (ACL LOAD), all or
// nothing: a file with a bad line changes nothing and the error names
// every problem. As in Redis, every user but the default one is new: the
// connections of the users before are closed (s's after its reply); the
// default user keeps its connections and takes the file's rules (or,
// absent from the file, "on nopass ~* &* +@all").
func (n *Node) LoadUsers(s *commands.Session) error {
	cfg := n.Config()
	if cfg.ACLFile == "" {
		return commands.ErrNoACLFile
	}
	data, err := os.ReadFile(cfg.ACLFile)
	if err != nil {
		return commands.ErrACLOpen(cfg.ACLFile, err)
	}
	defs, err := acl.ParseFile(cfg.ACLFile, data, n.catalog)
	if err != nil {
		var fe *acl.FileError
		if errors.As(err, &fe) {
			return commands.ErrACLFile(fe)
		}
		return err
	}
	byName := map[string]*acl.User{"default": n.defaultUser}
	def := acl.DefaultRules(n.catalog)
	for _, d := range defs {
		if d.Name == "default" {
			def = d.Rules
			continue
		}
		byName[d.Name] = acl.NewUser(d.Name, d.Rules)
	}
	n.users.mu.Lock()
	old := n.users.byName
	n.users.byName = byName
	n.defaultUser.SetRules(def)
	n.users.mu.Unlock()
	gone := map[*acl.User]bool{}
	for _, u := range old {
		if u != n.defaultUser {
			gone[u] = true
		}
	}
	n.closeUsers(s, gone)
	n.log.Info("ACL file loaded", "path", cfg.ACLFile, "users", len(byName))
	return nil
}

// SaveUsers writes the users to the ACL file (ACL SAVE), as ACL LIST
// shows them, replacing it atomically (configfile.WriteAtomic).
func (n *Node) SaveUsers() error {
	cfg := n.Config()
	if cfg.ACLFile == "" {
		return commands.ErrNoACLFile
	}
	if err := configfile.WriteAtomic(cfg.ACLFile, acl.FormatFile(n.Users(), n.catalog)); err != nil {
		n.log.Error("ACL SAVE failed", "path", cfg.ACLFile, "err", err)
		return commands.ErrACLSave
	}
	return nil
}
