//go:build race

package server_test

// soakRace: the race detector is on, so the soak test runs its shorter
// budget (TestSoak).
const soakRace = true
