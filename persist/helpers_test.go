package persist

import (
	"encoding/binary"
	"hash/crc32"
	"math"
	"testing"
)

// appendCRC checksums body as the codec does (key, then body) and appends
// the sum: a test builds records by hand with it.
func appendCRC(key string, body []byte) []byte {
	sum := crc32.Update(crc32.Checksum([]byte(key), crcTable), crcTable, body)
	return binary.LittleEndian.AppendUint32(append([]byte(nil), body...), sum)
}

// ways are the two ways a segment is written, as ingestMin values:
// every segment committed in a batch, or every one written as a table
// and ingested.
var ways = []struct {
	name string
	min  int
}{{"batch", math.MaxInt}, {"ingest", 0}}

// bothWays runs a test each way.
func bothWays(t *testing.T, test func(t *testing.T)) {
	for _, w := range ways {
		t.Run(w.name, func(t *testing.T) {
			defer func(was int) { ingestMin = was }(ingestMin)
			ingestMin = w.min
			test(t)
		})
	}
}
