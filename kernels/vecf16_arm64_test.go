//go:build arm64 && !purego

package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// TestValuesF16HeadsNEONShapes checks the neon tiers' ValuesF16Heads
// against the generic tier's, bit for bit, over every column split of its
// kernels (chunks of 16, of 4, and the last d mod 4 in Go: d = 1 to 21 and
// wider odd ones), every count of positions mod 32 and mod 8 (its passes
// of t mod 8 and their groups of four), grouped heads and weights that are
// not half-precision values (so that a multiply rounded before the add
// would differ from the fused multiply-add).
func TestValuesF16HeadsNEONShapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	ds := []int{36, 44, 52, 68, 100, 132}
	for d := 1; d <= 21; d++ {
		ds = append(ds, d)
	}
	ns := []int{70, 100, 257}
	for n := 1; n <= 40; n++ {
		ns = append(ns, n)
	}
	for _, name := range Tiers() {
		tr, err := TierNamed(name)
		if err != nil {
			t.Fatal(err)
		}
		if tr == genericTier {
			continue
		}
		for i, d := range ds {
			for k, n := range ns {
				heads, group, g0 := 3, 2, (i+k)%2
				kvs := (g0+heads-1)/group + 1
				stride := kvs*d + k%3
				values := make([]uint16, n*stride)
				for v := range values {
					values[v] = quant.FP32ToFP16(float32(rng.NormFloat64()))
				}
				pstride := n + 1
				p := make([]float32, heads*pstride)
				for v := range p {
					p[v] = float32(rng.Float64())
				}
				got, want := make([]float32, heads*d), make([]float32, heads*d)
				lanes := make([]float32, 32*heads*d)
				tr.ValuesF16Heads(got, lanes, values, stride, n, p, pstride, d, group, g0)
				genericTier.ValuesF16Heads(want, lanes, values, stride, n, p, pstride, d, group, g0)
				for c := range got {
					if !sameF32(got[c], want[c]) {
						t.Fatalf("%s: ValuesF16Heads d=%d n=%d g0=%d element %d = %g (%#x), want %g (%#x)",
							name, d, n, g0, c, got[c], math.Float32bits(got[c]), want[c], math.Float32bits(want[c]))
					}
				}
			}
		}
	}
}

// BenchmarkValuesF16HeadsNEON measures one layer's weighted values of the
// 12L-768 model (12 heads of 64, n cached positions) from an f16 cache:
// ValuesF16Heads over slot-major values on each tier, and "padded", the
// former attention's DotF16RowsPadded head by head over the values
// transposed (rows of n rounded up to 32) on the default tier (which runs
// the generic code where n is not a multiple of 32).
func BenchmarkValuesF16HeadsNEON(b *testing.B) {
	const heads, d = 12, 64
	r := rand.New(rand.NewPCG(21, 22))
	for _, n := range []int{50, 64, 256} {
		row := heads * d
		values := make([]uint16, n*row)
		for i := range values {
			values[i] = quant.FP32ToFP16(float32(r.NormFloat64()))
		}
		tstride := (n + 31) &^ 31
		vt := make([]uint16, row*tstride)
		for t := range n {
			for c := range row {
				vt[c*tstride+t] = values[t*row+c]
			}
		}
		p := make([]float32, heads*n)
		for i := range p {
			p[i] = float32(r.Float64() / float64(n))
		}
		RoundF16(p)
		lanes, out := make([]float32, heads*32*d), make([]float32, heads*d)
		for _, name := range append(Tiers(), "padded") {
			b.Run(fmt.Sprintf("n=%d/%s", n, name), func(b *testing.B) {
				if name == "padded" {
					for b.Loop() {
						for j := range heads {
							DotF16RowsPadded(out[j*d:(j+1)*d], vt[j*d*tstride:], tstride, p[j*n:(j+1)*n])
						}
					}
					return
				}
				tr, _ := TierNamed(name)
				for b.Loop() {
					tr.ValuesF16Heads(out, lanes, values, row, n, p, n, d, 1, 0)
				}
			})
		}
	}
}

// BenchmarkDotF16HeadsNEON measures one layer's attention scores from an
// f16 cache (12 query heads of 64, n = 50 positions, group query heads a
// key head): DotF16Heads on each tier, and "rows", DotF16Rows head by head
// on the default tier (what DotF16Heads did before it paired the heads).
func BenchmarkDotF16HeadsNEON(b *testing.B) {
	const heads, d, n = 12, 64, 50
	r := rand.New(rand.NewPCG(23, 24))
	for _, group := range []int{1, 2} {
		row := heads / group * d
		keys := make([]uint16, n*row)
		for i := range keys {
			keys[i] = quant.FP32ToFP16(float32(r.NormFloat64()))
		}
		q := make([]float32, heads*d)
		for i := range q {
			q[i] = float32(r.NormFloat64())
		}
		RoundF16(q)
		scores := make([]float32, heads*n)
		for _, name := range append(Tiers(), "rows") {
			b.Run(fmt.Sprintf("group=%d/%s", group, name), func(b *testing.B) {
				if name == "rows" {
					for b.Loop() {
						for j := range heads {
							DotF16Rows(scores[j*n:(j+1)*n], keys[j/group*d:], row, q[j*d:(j+1)*d])
						}
					}
					return
				}
				tr, _ := TierNamed(name)
				for b.Loop() {
					tr.DotF16Heads(scores, n, keys, row, n, q, d, group, 0, nil)
				}
			})
		}
	}
}
