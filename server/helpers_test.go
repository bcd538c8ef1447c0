package server_test

import "os"

// getenv reads an environment variable (tests that need a tool or a knob).
func getenv(k string) string { return os.Getenv(k) }
