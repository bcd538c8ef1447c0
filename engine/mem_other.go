//go:build !unix

package engine

func mapRegion(n int) []byte { return make([]byte, n) }

func unmapRegion([]byte) {}

func remapRegion([]byte, int) ([]byte, bool) { return nil, false }

func adviseFree([]byte) {}
