package acl

import (
	"math"
	"strings"
)

// Describe is the rules as ACL LIST shows them and the ACL file keeps
// them (Redis's ACLDescribeUser): the flags, the password digests after
// '#', the key patterns, the channel patterns ("resetchannels" first
// when not all), then the command rules (CommandRules).
func (r *Rules) Describe(cat *Catalog) string {
	var b strings.Builder
	for _, f := range r.Flags() {
		b.WriteString(f)
		b.WriteByte(' ')
	}
	for _, p := range r.passwords {
		b.WriteString("#" + p + " ")
	}
	if r.allKeys {
		b.WriteString("~* ")
	} else {
		for _, k := range r.keys {
			b.WriteString(k.describe() + " ")
		}
	}
	if r.allChannels {
		b.WriteString("&* ")
	} else {
		b.WriteString("resetchannels ")
		for _, c := range r.channels {
			b.WriteString("&" + c.text + " ")
		}
	}
	b.WriteString(r.CommandRules(cat))
	return b.String()
}

// Flags are the user's flags, in Redis's order: on or off, nopass,
// skip-sanitize-payload or sanitize-payload (ACL GETUSER's flags).
func (r *Rules) Flags() []string {
	f := []string{"off"}
	if r.on {
		f[0] = "on"
	}
	if r.nopass {
		f = append(f, "nopass")
	}
	switch r.sanitize {
	case payloadSkip:
		f = append(f, "skip-sanitize-payload")
	case payloadSanitize:
		f = append(f, "sanitize-payload")
	}
	return f
}

// Passwords are the password digests (ACL GETUSER's passwords).
func (r *Rules) Passwords() []string { return append([]string(nil), r.passwords...) }

// KeyRules are the key patterns as ACL GETUSER's keys shows them: "~*",
// or each pattern with its ~, %R~ or %W~, space-separated.
func (r *Rules) KeyRules() string {
	if r.allKeys {
		return "~*"
	}
	out := make([]string, len(r.keys))
	for i, k := range r.keys {
		out[i] = k.describe()
	}
	return strings.Join(out, " ")
}

// ChannelRules are the channel patterns as ACL GETUSER's channels shows
// them: "&*", or each pattern after '&', space-separated.
func (r *Rules) ChannelRules() string {
	if r.allChannels {
		return "&*"
	}
	out := make([]string, len(r.channels))
	for i, c := range r.channels {
		out[i] = "&" + c.text
	}
	return strings.Join(out, " ")
}

func (k keyPattern) describe() string {
	switch k.access {
	case Read:
		return "%R~" + k.text
	case Write:
		return "%W~" + k.text
	}
	return "~" + k.text
}

// CommandRules are the rules that rebuild the user's set of commands, as
// Redis 7.0 writes them (ACLDescribeSelectorCommandRules): "+@all" or
// "-@all" first, then, greedily, each category with more commands in
// common with the user than apart and the fewest apart, then the single
// commands still different (by name, each container before its
// subcommands) and the allowed first arguments. It describes the set,
// not the rules that made it: "+@all -@dangerous" may read back as
// "+@all -@admin -keys ...".
func (r *Rules) CommandRules(cat *Catalog) string {
	s := &r.commands
	var b strings.Builder
	fake := newCommandSet(cat)
	additive := !s.future
	if additive {
		b.WriteString("-@all ")
	} else {
		b.WriteString("+@all ")
		fake.setAll()
	}
	temp := commandSet{bits: append([]uint64(nil), s.bits...)}
	var applied [len(categoryNames)]bool
	for {
		best, minDiff, maxSame := -1, math.MaxInt, 0
		for j := range categoryNames {
			if applied[j] {
				continue
			}
			on, off := temp.count(cat, 1<<j)
			diff, same := off, on
			if !additive {
				diff, same = on, off
			}
			if same > diff && (diff < minDiff || diff == minDiff && same > maxSame) {
				best, minDiff, maxSame = j, diff, same
			}
		}
		if best < 0 {
			break
		}
		fake.category(cat, 1<<best, additive)
		temp.category(cat, 1<<best, !additive)
		if additive {
			b.WriteString("+@")
		} else {
			b.WriteString("-@")
		}
		b.WriteString(categoryNames[best] + " ")
		applied[best] = true
	}
	for _, id := range cat.top {
		s.describeSingle(cat, &fake, id, &b)
	}
	return strings.TrimSuffix(b.String(), " ")
}

// count is how many commands of category c the set has, and has not.
func (s *commandSet) count(cat *Catalog, c Categories) (on, off int) {
	for id := 0; id < cat.Len(); id++ {
		if cat.Command(id).Categories&c != 0 {
			if s.has(id) {
				on++
			} else {
				off++
			}
		}
	}
	return on, off
}

// describeSingle writes +name or -name where the set and fake still
// differ on command id, then does its subcommands, then its first
// arguments.
func (s *commandSet) describeSingle(cat *Catalog, fake *commandSet, id int, b *strings.Builder) {
	c := cat.Command(id)
	mine := s.has(id)
	if mine != fake.has(id) {
		if mine {
			b.WriteString("+")
		} else {
			b.WriteString("-")
		}
		b.WriteString(c.Name + " ")
		fake.change(cat, id, mine)
	}
	for _, sub := range c.Subcommands {
		s.describeSingle(cat, fake, sub, b)
	}
	if !mine {
		for _, a := range s.firstArgs[id] {
			b.WriteString("+" + c.Name + "|" + a + " ")
		}
	}
}
