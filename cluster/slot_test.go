package cluster

import "testing"

// Redis's own values (CLUSTER KEYSLOT on Redis 7.0.15).
func TestSlot(t *testing.T) {
	for _, tc := range []struct {
		key  string
		slot int
	}{
		{"123456789", 12739},
		{"foo", 12182},
		{"bar", 5061},
		{"{user1000}.following", 3443},
		{"{user1000}.followers", 3443},
		{"foo{}{bar}", 8363},
		{"a{b}c", 3300},
		{"b", 3300},
		{"{}x", 10595},
		{"foo{{bar}}zap", Slot([]byte("{bar"))},
		{"foo{bar}{zap}", Slot([]byte("bar"))},
		{"{", Slot([]byte("{"))},
		{"", 0},
	} {
		if got := Slot([]byte(tc.key)); got != tc.slot {
			t.Errorf("Slot(%q) = %d, want %d", tc.key, got, tc.slot)
		}
	}
	if crc16([]byte("123456789")) != 0x31C3 {
		t.Errorf("crc16 check value %#x, want 0x31c3", crc16([]byte("123456789")))
	}
}

func BenchmarkSlot(b *testing.B) {
	key := []byte("rl:user:1234567890")
	for b.Loop() {
		Slot(key)
	}
}
