// Command stand-in is the program the simulated cluster's containers find
// under the names of the programs an image holds (see package standin).
package main

import (
	"os"

	"github.com/llmrender/llmrender/e2e/cluster/standin"
)

func main() { os.Exit(standin.Run()) }
