// Package sdsargs splits a line into arguments as Redis's sdssplitargs
// does: the inline protocol's requests (package resp) and the
// configuration file's lines (package configfile) are read by one
// splitter, as Redis reads both with sdssplitargs.
package sdsargs

import "errors"

// Errors of Split; each reader words them its own way.
var (
	ErrUnbalanced = errors.New("unbalanced quotes")
	ErrTooMany    = errors.New("too many arguments")
	ErrTooLong    = errors.New("argument too long")
)

// Split appends line's arguments, unescaped, to buf, and two offsets into
// the returned buffer for each (its start and end) to bounds. Arguments
// are separated by C's isspace; an unquoted argument ends only at a space,
// tab, CR or LF (so "a\vb" is one argument). "..." takes the escapes \n
// \r \t \b \a \xHH and \ before any other byte, '...' only \'; quotes may
// open inside an argument (a"b c" is the argument ab c), and a closing
// quote must be followed by a space or the end (ErrUnbalanced). At most
// maxArgs arguments (ErrTooMany) of at most maxLen bytes each
// (ErrTooLong).
func Split(buf []byte, bounds []int, line []byte, maxArgs, maxLen int) ([]byte, []int, error) {
	i := 0
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i >= len(line) {
			return buf, bounds, nil
		}
		if len(bounds)/2 >= maxArgs {
			return buf, bounds, ErrTooMany
		}
		start := len(buf)
		inDQ, inSQ := false, false
	arg:
		for {
			if i >= len(line) {
				if inDQ || inSQ {
					return buf, bounds, ErrUnbalanced
				}
				break
			}
			c := line[i]
			switch {
			case inDQ:
				if c == '\\' && i+3 < len(line) && line[i+1] == 'x' {
					h, ok1 := hexVal(line[i+2])
					l, ok2 := hexVal(line[i+3])
					if ok1 && ok2 {
						buf = append(buf, h<<4|l)
						i += 4
						continue
					}
				}
				if c == '\\' && i+1 < len(line) {
					i++
					buf = append(buf, unescape(line[i]))
				} else if c == '"' {
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return buf, bounds, ErrUnbalanced
					}
					i++
					break arg
				} else {
					buf = append(buf, c)
				}
			case inSQ:
				if c == '\\' && i+1 < len(line) && line[i+1] == '\'' {
					i++
					buf = append(buf, '\'')
				} else if c == '\'' {
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return buf, bounds, ErrUnbalanced
					}
					i++
					break arg
				} else {
					buf = append(buf, c)
				}
			default:
				switch c {
				case ' ', '\t', '\n', '\r': // not \v or \f, as in Redis's sdssplitargs
					break arg
				case '"':
					inDQ = true
				case '\'':
					inSQ = true
				default:
					buf = append(buf, c)
				}
			}
			i++
			if len(buf)-start > maxLen {
				return buf, bounds, ErrTooLong
			}
		}
		bounds = append(bounds, start, len(buf))
	}
}

// isSpace is C's isspace: what separates arguments and may follow a
// closing quote.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func hexVal(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// unescape is the byte a backslash and c stand for inside "...".
func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'a':
		return '\a'
	}
	return c
}
