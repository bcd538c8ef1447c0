package replication

// backlog keeps the newest bytes of the stream, up to its size, so that
// a replica that reconnects (or is re-pointed after a failover) can be
// sent only what it lacks (docs/replication.md, "Partial resync").
//
// Offsets follow Redis: the stream's bytes are numbered from 1, end is
// the number of the last byte written (master_repl_offset), and the
// backlog holds bytes first..end (first = end+1 when it holds none).
type backlog struct {
	buf   []byte // a ring of cap size: byte o at index (o-base-1) % size
	base  int64  // end when the backlog was made
	end   int64  // offset of the last byte written
	first int64  // offset of the oldest byte held
}

func newBacklog(size int, end int64) *backlog {
	return &backlog{buf: make([]byte, 0, size), base: end, end: end, first: end + 1}
}

// index is where byte o is (or goes) in the ring.
func (b *backlog) index(o int64) int { return int((o - b.base - 1) % int64(cap(b.buf))) }

// size is the backlog's capacity in bytes.
func (b *backlog) size() int { return cap(b.buf) }

// histlen is how many bytes it holds.
func (b *backlog) histlen() int64 { return b.end - b.first + 1 }

// write appends p to the stream.
func (b *backlog) write(p []byte) {
	size := int64(cap(b.buf))
	for len(p) > 0 {
		if int64(len(b.buf)) < size { // still filling the ring for the first time
			n := min(len(p), cap(b.buf)-len(b.buf))
			b.buf = append(b.buf, p[:n]...)
			p = p[n:]
			b.end += int64(n)
			continue
		}
		n := copy(b.buf[b.index(b.end+1):], p)
		p = p[n:]
		b.end += int64(n)
	}
	if h := b.end - int64(len(b.buf)) + 1; h > b.first {
		b.first = h
	}
}

// covers reports whether the bytes from offset from on are all held (from
// may be end+1: nothing is missing).
func (b *backlog) covers(from int64) bool { return from >= b.first && from <= b.end+1 }

// read copies the bytes from offset from on into dst, as many as fit and
// are held, and returns how many it copied. from must be covered.
func (b *backlog) read(dst []byte, from int64) int {
	n := 0
	for n < len(dst) && from <= b.end {
		at := b.index(from)
		stop := len(b.buf)
		if rest := b.end - from + 1; int64(stop-at) > rest {
			stop = at + int(rest)
		}
		k := copy(dst[n:], b.buf[at:stop])
		n += k
		from += int64(k)
	}
	return n
}

// truncate drops the bytes after offset end, so the next write follows
// it. end must be at least first-1 and base.
func (b *backlog) truncate(end int64) {
	if end >= b.end {
		return
	}
	b.end = end
	if len(b.buf) < cap(b.buf) { // still filling: the next byte goes at len
		b.buf = b.buf[:end-b.base]
	}
}
