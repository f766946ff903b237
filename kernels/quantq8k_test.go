package kernels

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// TestQuantizeQ8_KEdges checks every tier's Q8_K activation quantizer against
// package quant's byte for byte: random activations of one to several
// blocks, and blocks that are zero, tie +max and −max in either order,
// hold a NaN or an infinity, or are so small that −127/max overflows.
func TestQuantizeQ8_KEdges(t *testing.T) {
	defer SetTier(DefaultTier().Name())
	tr, _ := quant.Lookup(quant.Q8_K)
	r := rand.New(rand.NewPCG(31, 32))
	var cases [][]float32
	for _, n := range []int{256, 512, 768, 2048, 4096} {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64()) * float32(math.Pow(10, float64(r.IntN(7)-3)))
		}
		cases = append(cases, x)
	}
	block := func(f func(x []float32)) {
		x := make([]float32, 256)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		f(x)
		cases = append(cases, x)
	}
	block(func(x []float32) { clear(x) })
	block(func(x []float32) { x[7], x[200] = 5, -5 })
	block(func(x []float32) { x[7], x[200] = -5, 5 })
	block(func(x []float32) { x[255] = -9 })
	block(func(x []float32) { x[0] = 9 })
	block(func(x []float32) { x[3] = float32(math.NaN()) })
	block(func(x []float32) { x[250] = float32(math.NaN()) })
	block(func(x []float32) { x[0], x[254] = 100, float32(math.NaN()) })
	block(func(x []float32) { x[100] = float32(math.Inf(-1)) })
	block(func(x []float32) {
		for i := range x {
			x[i] *= 1e-39 // −127/max overflows to −Inf
		}
	})
	block(func(x []float32) {
		for i := range x {
			x[i] = float32(int(x[i]*4)) / 4 // many ties of |x|
		}
	})
	for _, name := range Tiers() {
		SetTier(name)
		for i, x := range cases {
			want := make([]byte, len(x)/256*292)
			tr.Quantize(want, x)
			got := make([]byte, len(want)+1)
			got[len(want)] = 0xAA
			Quantize(quant.Q8_K, got[:len(want)], x)
			if !bytes.Equal(got[:len(want)], want) {
				for j := range want {
					if got[j] != want[j] {
						t.Errorf("%s: case %d: byte %d (block %d, offset %d) = %#x, want %#x", name, i, j, j/292, j%292, got[j], want[j])
						break
					}
				}
			}
			if got[len(want)] != 0xAA {
				t.Errorf("%s: case %d: wrote past the end", name, i)
			}
		}
	}
}
