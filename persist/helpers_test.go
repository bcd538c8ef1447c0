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

// bothWays runs a test with every segment committed in a batch, and
// again with every segment written as a table and ingested.
func bothWays(t *testing.T, test func(t *testing.T)) {
	for _, c := range []struct {
		name string
		min  int
	}{{"batch", math.MaxInt}, {"ingest", 0}} {
		t.Run(c.name, func(t *testing.T) {
			defer func(was int) { ingestMin = was }(ingestMin)
			ingestMin = c.min
			test(t)
		})
	}
}
