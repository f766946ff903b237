package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// TestPoolMatVecs checks that Pool.MatVecs gives every task the bits of
// MatVec, whatever the thread count, with tasks of mixed types and sizes
// (a task that is not whole groups of 8 rows before the last one takes the
// one-call-per-task path).
func TestPoolMatVecs(t *testing.T) {
	type shape struct {
		typ        quant.Type
		rows, cols int
	}
	tests := [][]shape{
		{{quant.Q4_0, 64, 256}, {quant.Q4_0, 16, 256}, {quant.Q4_0, 16, 256}},
		{{quant.Q4_0, 40, 512}, {quant.Q6_K, 24, 512}, {quant.Q8_0, 13, 512}},
		{{quant.Q8_0, 8, 64}, {quant.Q8_0, 3, 64}, {quant.Q4_0, 16, 64}},
		{{quant.Q6_K, 5, 256}},
		{{quant.Q4_K, 0, 256}, {quant.Q4_K, 200, 256}},
	}
	r := rand.New(rand.NewPCG(7, 8))
	for i, shapes := range tests {
		var tasks []MatVecTask
		var want [][]float32
		for _, sh := range shapes {
			act := randomRows(r, vecDotType[sh.typ], 1, sh.cols)
			w := randomRows(r, sh.typ, sh.rows, sh.cols)
			ref := make([]float32, sh.rows)
			MatVec(sh.typ, ref, w, sh.cols, act)
			want = append(want, ref)
			tasks = append(tasks, MatVecTask{Type: sh.typ, Out: make([]float32, sh.rows), W: w, Cols: sh.cols, Act: act})
		}
		for _, threads := range []int{1, 2, 3} {
			t.Run(fmt.Sprintf("%d/t%d", i, threads), func(t *testing.T) {
				p := NewPool(threads)
				defer p.Close()
				for k := range tasks {
					clear(tasks[k].Out)
				}
				p.MatVecs(tasks)
				for k, task := range tasks {
					for j := range task.Out {
						if math.Float32bits(task.Out[j]) != math.Float32bits(want[k][j]) {
							t.Fatalf("task %d (%v) row %d = %g, want %g", k, task.Type, j, task.Out[j], want[k][j])
						}
					}
				}
			})
		}
	}
}

// TestPoolMatMuls checks that Pool.MatMuls gives every task the bits of
// MatMul on every tier, whatever the thread count: tasks reading the same
// activations (sharing their preparation, as Q, K and V do) or their own,
// of mixed types, token counts that use the tiles, their rests and rows,
// and a task that is not whole groups of 8 rows before the last one (the
// one-call-per-task path).
func TestPoolMatMuls(t *testing.T) {
	type shape struct {
		typ        quant.Type
		rows, cols int
		own        bool // activations of its own, not the previous task's
	}
	tests := [][]shape{
		{{quant.Q4_0, 64, 256, true}, {quant.Q4_0, 16, 256, false}, {quant.Q4_0, 16, 256, false}},
		{{quant.Q4_0, 40, 512, true}, {quant.Q6_K, 24, 512, true}, {quant.Q8_0, 13, 512, true}},
		{{quant.Q6_K, 48, 512, true}, {quant.Q6_K, 24, 512, false}, {quant.Q6_K, 16, 512, true}},
		{{quant.Q4_0, 16, 256, true}, {quant.Q4_0, 24, 256, true}},
		{{quant.Q8_0, 8, 64, true}, {quant.Q8_0, 3, 64, false}, {quant.Q4_0, 16, 64, true}},
		{{quant.Q4_K, 0, 256, true}, {quant.Q4_K, 200, 256, false}},
	}
	r := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{1, 3, 4, 5, 8, 13} {
		for i, shapes := range tests {
			var tasks []MatMulTask
			for _, sh := range shapes {
				acts := randomRows(r, vecDotType[sh.typ], n, sh.cols)
				if k := len(tasks) - 1; !sh.own && k >= 0 {
					acts = tasks[k].Acts
				}
				w := randomRows(r, sh.typ, sh.rows, sh.cols)
				tasks = append(tasks, MatMulTask{Type: sh.typ, Out: make([]float32, n*sh.rows), W: w, Cols: sh.cols, Acts: acts, N: n})
			}
			for _, name := range Tiers() {
				tr, _ := TierNamed(name)
				var want [][]float32
				for _, task := range tasks {
					ref := make([]float32, len(task.Out))
					tr.MatMul(task.Type, ref, task.W, task.Cols, task.Acts, n)
					want = append(want, ref)
				}
				for _, threads := range []int{1, 2, 3} {
					t.Run(fmt.Sprintf("%s/n%d/%d/t%d", name, n, i, threads), func(t *testing.T) {
						p := NewPoolTier(tr, threads)
						defer p.Close()
						for k := range tasks {
							clear(tasks[k].Out)
						}
						p.MatMuls(tasks)
						for k, task := range tasks {
							for j := range task.Out {
								if math.Float32bits(task.Out[j]) != math.Float32bits(want[k][j]) {
									t.Fatalf("task %d (%v) element %d = %g, want %g", k, task.Type, j, task.Out[j], want[k][j])
								}
							}
						}
					})
				}
			}
		}
	}
}
