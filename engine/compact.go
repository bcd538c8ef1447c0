package engine

import "math"

// Compaction gives back the garbage in a shard's data region (the old
// copies of records that moved, the records of keys removed): live
// records slide down over the dead ones, in order, within the region, and
// their slots are repointed. No new region, no page to fault in; the pages
// emptied at the end go back to the OS.
//
// It runs in steps, each under the shard lock, so that no request waits
// behind a whole shard (at 12,500 keys a shard took 400-700 µs in one
// piece, and that showed in the p99). A step visits compactStep bytes of
// records, or twice what was appended since the previous step if that is
// more, so a compaction ends however fast records are appended. Between
// steps requests run as usual: every live record stays reachable through
// the table at its current place, records appended meanwhile land past
// the part still to visit, and a region that grows keeps its offsets.
// While a compaction is under way (s.compacting):
//
//	[0, cw)          compacted records
//	[cw, cr)         one dead filler record: the gap the slides opened, so
//	                 that every walk of the region reads whole records
//	[cr, len(data))  records not yet visited
//
// A record moves only to a lower offset and never over bytes at or past its
// own end, so the records still to visit are intact. The gap only ever
// holds whole dead records, each at least minRecord bytes, so a filler
// always fits in it.
const compactStep = 8 << 10

// minRecord is the size of the smallest record of any kind: a
// CL.THROTTLE record with an empty key and no slack.
const minRecord = 12

// wastefulLocked: an eighth of the region is garbage (and enough of it to
// be worth a pass), so the sweeper compacts the shard.
func (s *shard) wastefulLocked() bool { return s.garbage >= 4096 && s.garbage*8 >= len(s.data) }

// compactStepLocked runs one step of the shard's compaction, starting one
// if none is under way: it visits at least budget bytes of records (all
// that are left if fewer), and at least twice the bytes appended since the
// previous step. It reports whether the compaction has finished.
func (s *shard) compactStepLocked(budget int) (done bool) {
	if !s.compacting {
		s.compacting, s.cw, s.cr, s.cLen = true, 0, 0, len(s.data)
	}
	if appended := len(s.data) - s.cLen; appended > budget/2 {
		budget = 2 * appended
	}
	for start := s.cr; s.cr < len(s.data) && s.cr-start < budget; {
		if s.sweepAt == s.cr {
			s.sweepAt = s.cw // the sweep resumes at the record it was to visit
		}
		rec := parseRecord(s.data, s.cr)
		end := rec.end
		if rec.hdr&hdrDead == 0 {
			if s.cw != s.cr {
				tag := tagOf(s.hash(rec.key)) // before the copy overwrites the key
				slot := s.slotLocked(tag, s.cr)
				copy(s.data[s.cw:], s.data[s.cr:end])
				*slot = makeSlot(tag, s.cw)
			}
			s.cw += end - s.cr
		}
		s.cr = end
	}
	if s.cr < len(s.data) {
		if s.cw < s.cr {
			writeFiller(s.data[s.cw:s.cr])
		}
		s.cLen = len(s.data)
		return false
	}
	if s.sweepAt >= s.cr {
		s.sweepAt = s.cw
	}
	used := len(s.data)
	s.garbage -= used - s.cw
	s.data = s.data[:s.cw]
	s.compacting = false
	s.compactions++
	// The emptied tail's pages go back to the OS in slices, from the
	// sweep: madvise takes about 170 µs a MiB here, too long to hold the
	// lock for at once.
	if s.relFrom < s.relTo {
		s.relFrom, s.relTo = min(s.relFrom, s.cw), max(s.relTo, used)
	} else {
		s.relFrom, s.relTo = s.cw, used
	}
	return true
}

// releaseStep is how many bytes of emptied region one sweep step gives
// back to the OS (about 45 µs of madvise).
const releaseStep = 256 << 10

// releaseStepLocked gives back the pages of up to n bytes of the emptied
// part of the data region, and reports whether some are left. Records
// appended since it was emptied are never released: the part starts at
// len(data) at the earliest.
func (s *shard) releaseStepLocked(n int) (more bool) {
	from, to := max(s.relFrom, len(s.data)), min(s.relTo, len(s.mem.data))
	if from >= to || len(s.mem.data) < mapMin { // (a heap region keeps its pages)
		s.relFrom, s.relTo = 0, 0
		return false
	}
	// Slices end on page boundaries, so no page straddles two of them
	// (releasePages gives back whole pages only).
	end := min((from+pageSize-1)/pageSize*pageSize+n, to)
	releasePages(s.mem.data, from, end)
	s.relFrom = end
	return end < to
}

// compactInPlaceLocked compacts the shard at once, leaving no garbage:
// it finishes a compaction under way, then passes again if records in its
// compacted part died meanwhile.
func (s *shard) compactInPlaceLocked() {
	wasUnderWay := s.compacting
	s.compactStepLocked(math.MaxInt)
	if wasUnderWay && s.garbage > 0 {
		s.compactStepLocked(math.MaxInt)
	}
}

// writeFiller makes b, at least minRecord bytes of dead records, one dead
// record spanning all of it.
func writeFiller(b []byte) {
	rec := appendRecord(b[:0:len(b)], byte(KindThrottle)|hdrDead, nil, entry{}, nil)
	if _, ok := fillSlack(rec, len(b)); !ok || len(b) < minRecord {
		panic("engine: compaction gap smaller than a record")
	}
}
