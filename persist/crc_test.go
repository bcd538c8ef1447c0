package persist

import (
	"encoding/binary"
	"hash/crc32"
)

func appendCRC(key string, body []byte) []byte {
	sum := crc32.Update(crc32.Checksum([]byte(key), crcTable), crcTable, body)
	return binary.LittleEndian.AppendUint32(append([]byte(nil), body...), sum)
}
