//go:build !race

package server_test

// soakRace: the race detector is off, so the soak test runs its full
// budget (TestSoak).
const soakRace = false
