//go:build !unix

package main

import "time"

// cpuTime is unknown here; qsf bench then reports wall time only.
func cpuTime() time.Duration { return 0 }
