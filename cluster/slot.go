package cluster

// Slots is the number of hash slots; a key's slot is in [0, Slots).
const Slots = 16384

// crcTable is CRC16-XMODEM's (polynomial 0x1021, initial value 0) table,
// the checksum Redis Cluster hashes keys with.
var crcTable = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// crc16 is CRC16-XMODEM of b.
func crc16(b []byte) uint16 {
	var c uint16
	for _, x := range b {
		c = c<<8 ^ crcTable[byte(c>>8)^x]
	}
	return c
}

// Slot is key's hash slot, as Redis computes it: when the key holds a
// '{' followed later by a '}' with at least one byte between, only those
// bytes (the hash tag) are hashed, so keys sharing a tag share a slot.
func Slot(key []byte) int {
	for i, c := range key {
		if c != '{' {
			continue
		}
		for j := i + 1; j < len(key); j++ {
			if key[j] == '}' {
				if j > i+1 {
					key = key[i+1 : j]
				}
				return int(crc16(key) & (Slots - 1))
			}
		}
		break
	}
	return int(crc16(key) & (Slots - 1))
}
