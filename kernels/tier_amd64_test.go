//go:build amd64 && !purego

package kernels

import (
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// TestKernelTiersAVX512 checks KernelTiers on rows of the avx512 table
// that are its own, inherited from avx2, and mixed.
func TestKernelTiersAVX512(t *testing.T) {
	if !haveAVX512 {
		t.Skip("CPU lacks AVX-512 F/BW/VL/VNNI")
	}
	for _, c := range []struct {
		typ        quant.Type
		rows, tile string
	}{
		{quant.Q4_K, "avx512", "avx512"},
		{quant.Q2_K, "avx2", ""},
		{quant.BF16, "avx2", "avx2"},
		{quant.F16, "avx2", "avx512"},
		{Q4_0x8, "avx512", "avx512"},
	} {
		if rows, tile := avx512Tier.KernelTiers(c.typ, 1); rows != c.rows || tile != c.tile {
			t.Errorf("avx512 %v: %q, %q; want %q, %q", typeName(c.typ), rows, tile, c.rows, c.tile)
		}
	}
}
