package model

import "testing"

// TestGELUTableFusedEntry checks the GELU table entries around the one that
// ggml_gelu_f32's fused multiply-add changes (buildGELUTable): fp16 0xBFFF
// (x = -1.9990234) holds 0xA9D3 in llama.cpp's table, where the twice-rounded
// 1 + a·x·x gives 0xA9D2. The values are those of ggml_gelu_f32 compiled by
// GCC -O3 -mavx2 -mfma -mf16c with glibc's tanhf, whose whole table
// buildGELUTable reproduces; the synthetic gpt2 reference depends on this
// entry.
func TestGELUTableFusedEntry(t *testing.T) {
	geluOnce.Do(buildGELUTable)
	for _, c := range []struct{ x, want uint16 }{
		{0xBFFE, 0xA9D5},
		{0xBFFF, 0xA9D3},
		{0xC000, 0xA9D0},
	} {
		if got := geluTable[c.x]; got != c.want {
			t.Errorf("geluTable[%#04x] = %#04x, want %#04x", c.x, got, c.want)
		}
	}
}
