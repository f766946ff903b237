package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// BenchmarkF32Heads measures one layer's attention kernels for the
// 12L-768 model on each tier: the scores of 12 query heads of 64 over n
// cached positions (dot: DotF32Heads, the values fetched on the way),
// their weighted values (values: ValuesF32Heads; lanes: the same sums by
// LanesF32Heads and ReduceLanes32F32), and both (dot and values). "hot" reads one
// layer's keys and values again and again (in L2); "cold" goes round 128
// MiB of them, from memory, as a decoding step meets them after its
// mat-muls. h=6 is half the heads (of each row), a thread's share when
// one sequence's heads are split between two. cpu-ns/op is the thread's
// CPU time per layer.
func BenchmarkF32Heads(b *testing.B) {
	const heads, d = 12, 64
	r := rand.New(rand.NewPCG(21, 22))
	for _, n := range []int{50, 100, 200} {
		for _, temp := range []string{"hot", "cold"} {
			row := heads * d
			layers := 1
			if temp == "cold" {
				layers = (128 << 20) / (2 * 4 * n * row)
			}
			keys, values := make([]float32, layers*n*row), make([]float32, layers*n*row)
			for i := range keys {
				keys[i], values[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
			}
			q := make([]float32, heads*d)
			for i := range q {
				q[i] = float32(r.NormFloat64())
			}
			scores := make([]float32, heads*n)
			for i := range scores {
				scores[i] = float32(r.Float64() / float64(n))
			}
			lanes, out := make([]float32, heads*32*d), make([]float32, heads*d)
			for _, op := range []string{"dot", "values", "lanes", "both"} {
				for _, hs := range []int{heads, heads / 2} {
					if hs != heads && op != "both" {
						continue
					}
					for _, name := range Tiers() {
						tr, _ := TierNamed(name)
						b.Run(fmt.Sprintf("n=%d/%s/%s/h=%d/%s", n, temp, op, hs, name), func(b *testing.B) {
							benchLayers(b, layers, func(l int) {
								k, v := keys[l*n*row:(l+1)*n*row], values[l*n*row:(l+1)*n*row]
								switch op {
								case "dot":
									tr.DotF32Heads(scores, n, k, row, n, q[:hs*d], d, 1, 0, v)
								case "values":
									tr.ValuesF32Heads(out[:hs*d], lanes[:hs*32*d], v, row, n, scores, n, d, 1, 0)
								case "lanes":
									tr.LanesF32Heads(lanes[:hs*32*d], v, row, n, scores, n, d, 1, 0)
									for j := range hs {
										tr.ReduceLanes32F32(out[j*d:(j+1)*d], lanes[j*32*d:(j+1)*32*d])
									}
								case "both":
									tr.DotF32Heads(scores, n, k, row, n, q[:hs*d], d, 1, 0, v)
									tr.ValuesF32Heads(out[:hs*d], lanes[:hs*32*d], v, row, n, scores, n, d, 1, 0)
								}
							})
						})
					}
				}
			}
		}
	}
}

// BenchmarkF16Heads is BenchmarkF32Heads for a half-precision cache
// (DotF16Heads, ValuesF16Heads): the same layer's attention over half the
// bytes. The queries and weights are rounded to half precision, as the
// model rounds them.
func BenchmarkF16Heads(b *testing.B) {
	const heads, d = 12, 64
	r := rand.New(rand.NewPCG(21, 22))
	for _, n := range []int{50, 100, 200} {
		for _, temp := range []string{"hot", "cold"} {
			row := heads * d
			layers := 1
			if temp == "cold" {
				layers = (128 << 20) / (2 * 2 * n * row)
			}
			keys, values := make([]uint16, layers*n*row), make([]uint16, layers*n*row)
			for i := range keys {
				keys[i] = quant.FP32ToFP16(float32(r.NormFloat64()))
				values[i] = quant.FP32ToFP16(float32(r.NormFloat64()))
			}
			q := make([]float32, heads*d)
			for i := range q {
				q[i] = float32(r.NormFloat64())
			}
			RoundF16(q)
			scores := make([]float32, heads*n)
			for i := range scores {
				scores[i] = float32(r.Float64() / float64(n))
			}
			RoundF16(scores)
			lanes, out := make([]float32, heads*32*d), make([]float32, heads*d)
			for _, op := range []string{"dot", "values", "both"} {
				for _, hs := range []int{heads, heads / 2} {
					if hs != heads && op != "both" {
						continue
					}
					for _, name := range Tiers() {
						tr, _ := TierNamed(name)
						b.Run(fmt.Sprintf("n=%d/%s/%s/h=%d/%s", n, temp, op, hs, name), func(b *testing.B) {
							benchLayers(b, layers, func(l int) {
								k, v := keys[l*n*row:(l+1)*n*row], values[l*n*row:(l+1)*n*row]
								switch op {
								case "dot":
									tr.DotF16Heads(scores, n, k, row, n, q[:hs*d], d, 1, 0, v)
								case "values":
									tr.ValuesF16Heads(out[:hs*d], lanes[:hs*32*d], v, row, n, scores, n, d, 1, 0)
								case "both":
									tr.DotF16Heads(scores, n, k, row, n, q[:hs*d], d, 1, 0, v)
									tr.ValuesF16Heads(out[:hs*d], lanes[:hs*32*d], v, row, n, scores, n, d, 1, 0)
								}
							})
						})
					}
				}
			}
		}
	}
}

// benchLayers runs step on layer 0, 1, ... layers−1 and round again, once
// per iteration, on a locked thread, and reports the thread's CPU time per
// iteration (cpu-ns/op).
func benchLayers(b *testing.B, layers int, step func(l int)) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0 := threadCPU()
	l := 0
	for b.Loop() {
		step(l)
		if l++; l == layers {
			l = 0
		}
	}
	if cpu1 := threadCPU(); cpu0 >= 0 && cpu1 > cpu0 {
		b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
	}
}
