//go:build amd64 && !purego

package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// TestQ4_0x16AVX512Kernels checks the avx512 Q4_0x16 kernels, called
// directly, GFNI and not (as far as the CPU runs them), against the
// avx512 Q4_0x8 kernels on the Q4_0x8 form of the same matrix, bit for
// bit, on arbitrary bytes (-128 quants included) and random rows: the
// decode kernel and the tiles of 2 to 8 activations, output rows spaced
// wider than the matrix, nothing written past them.
func TestQ4_0x16AVX512Kernels(t *testing.T) {
	if !haveAVX512 {
		t.Skip("CPU lacks AVX-512 F/BW/VL/VNNI")
	}
	gfnis := []bool{false}
	if haveGFNI {
		gfnis = append(gfnis, true)
	}
	r := rand.New(rand.NewPCG(165, 166))
	for _, sh := range []struct{ rows, cols int }{{16, 32}, {32, 64}, {48, 96}, {400, 320}, {16, 4096}, {64, 768}} {
		for _, arbitrary := range []bool{false, true} {
			var w, acts []byte
			if arbitrary {
				w = arbitraryRows(r, quant.Q4_0, sh.rows, sh.cols)
				acts = arbitraryRows(r, quant.Q8_0, maxTileTokens, sh.cols)
			} else {
				w = randomRows(r, quant.Q4_0, sh.rows, sh.cols)
				acts = randomRows(r, quant.Q8_0, maxTileTokens, sh.cols)
			}
			actBytes := len(acts) / maxTileTokens
			rb, _ := quant.RowBytes(quant.Q4_0, sh.cols)
			x8, x16 := make([]byte, len(w)), make([]byte, len(w))
			if err := RepackTo(Q4_0x8, x8, w, sh.rows, sh.cols); err != nil {
				t.Fatal(err)
			}
			if err := RepackTo(Q4_0x16, x16, w, sh.rows, sh.cols); err != nil {
				t.Fatal(err)
			}
			for _, gfni := range gfnis {
				name := fmt.Sprintf("%dx%d/arbitrary=%v/gfni=%v", sh.rows, sh.cols, arbitrary, gfni)
				aux := prepQ4_0x8(nil, acts[:actBytes], sh.cols)
				want := make([]float32, sh.rows)
				q4_0x8AVX512(want, x8, rb, sh.cols, nil, aux)
				got := make([]float32, sh.rows+16)
				for i := range got {
					got[i] = 42
				}
				q4_0x16AVX512(gfni)(got[:sh.rows], x16, rb, sh.cols, nil, aux)
				equalBits(t, name+"/decode", got[:sh.rows], want)
				for i := sh.rows; i < len(got); i++ {
					if got[i] != 42 {
						t.Fatalf("%s/decode wrote past out", name)
					}
				}
				tiles := q4_0x16TilesAVX512(gfni)
				for n := 2; n <= 8; n++ {
					ostride := sh.rows + 5
					want := make([]float32, n*ostride)
					got := make([]float32, n*ostride)
					for i := range got {
						got[i], want[i] = 42, 42
					}
					k8, k16 := &tileQ4_0x8AVX512[n], &tiles[n]
					pk := make([]byte, k16.packBytes(sh.cols))
					k16.pack(pk, acts[:n*actBytes], actBytes, sh.cols)
					k8.run(want, ostride, x8, rb, sh.cols, sh.rows, pk)
					k16.run(got, ostride, x16, rb, sh.cols, sh.rows, pk)
					equalBits(t, fmt.Sprintf("%s/tile %d", name, n), got, want)
				}
			}
		}
	}
}
