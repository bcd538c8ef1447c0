package acl

import (
	"fmt"
	"sort"
	"strings"
)

// Definition is one user of an ACL file: its name and its rules.
type Definition struct {
	Name  string
	Rules *Rules
}

// ProblemKind is what is wrong with a line of an ACL file.
type ProblemKind uint8

// The problems Redis's ACL LOAD tells apart.
const (
	NotUserLine   ProblemKind = iota + 1 // not "user <name> ..."
	BadUserName                          // a name with spaces or NUL bytes
	DuplicateUser                        // a name defined twice
	BadRule                              // a rule that cannot be applied (Rule says which and why)
)

// Problem is one thing wrong with a line of an ACL file.
type Problem struct {
	Line int // from 1
	Kind ProblemKind
	Name string     // the user's name (BadUserName, DuplicateUser)
	Rule *RuleError // BadRule
}

// FileError is an ACL file that cannot be loaded: every problem found,
// in file order. Nothing of such a file is loaded.
type FileError struct {
	Path     string
	Problems []Problem
}

func (e *FileError) Error() string {
	if len(e.Problems) == 0 {
		return e.Path + ": bad ACL file"
	}
	p := e.Problems[0]
	return fmt.Sprintf("%s:%d: bad ACL line (%d problems)", e.Path, p.Line, len(e.Problems))
}

// ParseFile reads an ACL file's text as Redis's ACL LOAD does
// (ACLLoadFromFile): each line, trimmed, is blank or "user <name>
// <rule> ...", words separated by single spaces (no quoting; comments
// are not allowed, as the file is rewritten). Each user starts as a new
// user (NewRules): the default user needs its "on nopass ~* &* +@all"
// or whatever it is to have; a file without it leaves it at
// DefaultRules. Every problem of the file is reported, a rule of an
// unknown command or category each time, other bad rules once per line;
// path only names the file in them.
func ParseFile(path string, data []byte, cat *Catalog) ([]Definition, error) {
	var (
		defs     []Definition
		problems []Problem
		seen     = map[string]bool{}
	)
	for i, line := range strings.Split(string(data), "\n") {
		n := i + 1
		line = strings.Trim(line, " \t\r\n")
		if line == "" {
			continue
		}
		argv := strings.Split(line, " ")
		if argv[0] != "user" || len(argv) < 2 {
			problems = append(problems, Problem{Line: n, Kind: NotUserLine})
			continue
		}
		name := argv[1]
		if hasSpaces(name) {
			problems = append(problems, Problem{Line: n, Kind: BadUserName, Name: name})
			continue
		}
		if seen[name] {
			problems = append(problems, Problem{Line: n, Kind: DuplicateUser, Name: name})
			continue
		}
		seen[name] = true
		r := NewRules(cat)
		syntax := false
		for _, op := range argv[2:] {
			op = strings.Trim(op, "\t\r\n")
			if err := r.apply(cat, op); err != nil {
				if err.Reason == UnknownName || !syntax {
					problems = append(problems, Problem{Line: n, Kind: BadRule, Rule: err})
				}
				syntax = syntax || err.Reason != UnknownName
			}
		}
		r.unrestricted = r.commands.all && r.allKeys && r.allChannels
		defs = append(defs, Definition{Name: name, Rules: r})
	}
	if len(problems) > 0 {
		return nil, &FileError{Path: path, Problems: problems}
	}
	return defs, nil
}

// FormatFile is the ACL file of users (ACL SAVE): a line "user <name>
// <rules>" each (Rules.Describe), by name.
func FormatFile(users []*User, cat *Catalog) []byte {
	sorted := append([]*User(nil), users...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name() < sorted[j].Name() })
	var b strings.Builder
	for _, u := range sorted {
		b.WriteString("user " + u.Name() + " " + u.Rules().Describe(cat) + "\n")
	}
	return []byte(b.String())
}
