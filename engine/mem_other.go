//go:build !unix

package engine

func mapRegion(n int) []byte { return make([]byte, n) }

func unmapRegion([]byte) {}
