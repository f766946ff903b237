package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// TestMatMul checks that MatMul and Pool.MatMul give exactly the results of
// n MatVec calls, for every tier, including matrices larger than a tile.
func TestMatMul(t *testing.T) {
	defer SetTier(DefaultTier().Name())
	r := rand.New(rand.NewPCG(19, 20))
	cases := []struct {
		typ        quant.Type
		rows, cols int
		n          int
	}{
		{quant.Q8_0, 7, 96, 3},
		{quant.Q4_0, 130, 4096, 2}, // 130 rows × 2304 bytes: several tiles
		{quant.Q4_K, 33, 768, 5},
		{quant.Q6_K, 1, 256, 1},
		{quant.F32, 5, 33, 4},
	}
	// Tile kernels take activations four (or eight, with a four-wide
	// kernel for what is left) at a time: whole tiles, remainders, and
	// matrices of several row tiles and odd row counts.
	for _, n := range []int{1, 3, 4, 5, 8, 13, 64, 65} {
		cases = append(cases, []struct {
			typ        quant.Type
			rows, cols int
			n          int
		}{
			{quant.Q8_0, 67, 288, n},
			{quant.Q4_0, 24, 256, n}, // gemv order
			{quant.Q4_0, 21, 256, n}, // vec_dot order
			{quant.Q4_K, 19, 512, n},
			{quant.Q6_K, 17, 512, n},
			{quant.F32, 13, 100, n},
		}...)
	}
	cases = append(cases, []struct {
		typ        quant.Type
		rows, cols int
		n          int
	}{
		{quant.Q8_0, 131, 2048, 9}, // several tiles
		{quant.Q4_0, 136, 4096, 6},
		{quant.Q4_K, 70, 4096, 5},
		{quant.Q6_K, 70, 4096, 5},
		{quant.F32, 70, 1024, 5},
		{quant.F32, 71, 1056, 9},  // eight-wide tiles over two slabs of columns
		{quant.F32, 200, 1056, 9}, // several of the avx512 tier's larger F32 tiles
		{quant.F32, 50, 8200, 16},
	}...)
	for _, c := range cases {
		if _, err := quant.Lookup(c.typ); err != nil {
			continue
		}
		w := randomRows(r, c.typ, c.rows, c.cols)
		acts := randomRows(r, vecDotType[c.typ], c.n, c.cols)
		actBytes := len(acts) / c.n
		for _, name := range Tiers() {
			SetTier(name)
			want := make([]float32, c.n*c.rows)
			for i := 0; i < c.n; i++ {
				MatVec(c.typ, want[i*c.rows:(i+1)*c.rows], w, c.cols, acts[i*actBytes:(i+1)*actBytes])
			}
			for _, threads := range []int{0, 1, 2} {
				t.Run(fmt.Sprintf("%s/%v/%dx%d/n%d/t%d", name, c.typ, c.rows, c.cols, c.n, threads), func(t *testing.T) {
					got := make([]float32, c.n*c.rows)
					if threads == 0 {
						MatMul(c.typ, got, w, c.cols, acts, c.n)
					} else {
						p := NewPool(threads)
						p.MatMul(c.typ, got, w, c.cols, acts, c.n)
						p.Close()
					}
					for i := range got {
						if got[i] != want[i] {
							t.Fatalf("out[%d] = %g, MatVec gives %g", i, got[i], want[i])
						}
					}
				})
			}
		}
	}
	if msg := catch(func() { MatMul(quant.Q8_0, make([]float32, 3), make([]byte, 34), 32, make([]byte, 34), 2) }); msg == "" {
		t.Error("MatMul accepted 3 outputs for 2 vectors")
	}
}
