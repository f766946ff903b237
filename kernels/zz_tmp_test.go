//go:build amd64 && !purego

package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/qsf-llm/qsf/quant"
)

func BenchmarkZZDecodeAhead(b *testing.B) {
	const rows, cols = 32000 * 4, 768 // 393 MB: from DRAM
	r := rand.New(rand.NewPCG(1, 2))
	w := randomRows(r, quant.F32, rows, cols)
	act := randomRows(r, quant.F32, 1, cols)
	out := make([]float32, rows)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	res := map[int][]float64{}
	aheads := []int{0, 2 << 10, 4 << 10, 8 << 10, 16 << 10, 32 << 10}
	for rep := 0; rep < 5; rep++ {
		for _, a := range aheads {
			t0 := time.Now()
			c0 := threadCPU()
			dotF32AVX512(&out[0], rows, &w[0], cols/32, 4*cols, &act[0], a)
			_ = c0
			d := time.Since(t0)
			res[a] = append(res[a], float64(len(w))/d.Seconds()/1e9)
		}
	}
	for _, a := range aheads {
		v := res[a]
		best := 0.0
		for _, x := range v {
			best = max(best, x)
		}
		fmt.Printf("ahead %6d: GB/s runs %.1f, best %.1f\n", a, v, best)
	}
}
