package persist

import (
	"encoding/binary"
	"hash/crc32"
)

// appendCRC checksums body as the codec does (key, then body) and appends
// the sum: a test builds records by hand with it.
func appendCRC(key string, body []byte) []byte {
	sum := crc32.Update(crc32.Checksum([]byte(key), crcTable), crcTable, body)
	return binary.LittleEndian.AppendUint32(append([]byte(nil), body...), sum)
}
