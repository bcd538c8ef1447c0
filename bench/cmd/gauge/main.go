// Command gauge prints the machine's noise gauge (package gauge): the ms
// a fixed CPU-bound loop takes now. bench/harness/lib.sh runs it before
// and after every run, pinned to the server's CPU.
package main

import (
	"fmt"

	"github.com/rlserver/rlserver/bench/gauge"
)

func main() { fmt.Printf("%.1f\n", gauge.Ms()) }
