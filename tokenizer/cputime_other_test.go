//go:build !unix

package tokenizer

import "time"

// cpuTime returns 0 where getrusage is missing (Windows, wasm), so the
// benchmarks report no cpu-MB/s there.
func cpuTime() time.Duration { return 0 }
