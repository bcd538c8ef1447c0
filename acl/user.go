package acl

import "sync/atomic"

// User is a user: a name and its rules. A connection logged in as a user
// holds the User, and the rules it runs under are the user's rules of the
// moment: ACL SETUSER changes them for every such connection at once, as
// in Redis. Safe for concurrent use.
type User struct {
	name  string
	rules atomic.Pointer[Rules]
}

// NewUser returns the user name with rules r.
func NewUser(name string, r *Rules) *User {
	u := &User{name: name}
	u.rules.Store(r)
	return u
}

// Name is the user's name.
func (u *User) Name() string { return u.name }

// Rules are the user's rules now.
func (u *User) Rules() *Rules { return u.rules.Load() }

// SetRules replaces the user's rules.
func (u *User) SetRules(r *Rules) { u.rules.Store(r) }
