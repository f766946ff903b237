//go:build amd64 && !purego

package kernels

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// TestPrepRotX8Asm checks prepRotX8Asm byte for byte against prepRotX8:
// random activations of several lengths, quants all −128 or all 127 (the
// extreme sums), and every one of the 65536 float16 scales (subnormals,
// infinities and NaNs included) in both halves of a block.
func TestPrepRotX8Asm(t *testing.T) {
	if !haveAVX2 {
		t.Skip("no AVX2+F16C")
	}
	r := rand.New(rand.NewPCG(5, 6))
	check := func(name string, act []byte, cols int) {
		t.Helper()
		want := prepRotX8(nil, act, cols)
		got := prepRotX8Asm(make([]byte, 3), act, cols)
		if !bytes.Equal(got, want) {
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("%s, %d columns: byte %d (block %d, offset %d) = %#x, want %#x",
						name, cols, i, i/rotX8PrepBlock, i%rotX8PrepBlock, got[i], want[i])
				}
			}
		}
	}
	for _, cols := range []int{64, 128, 192, 2048, 5632} {
		check("random", randomRows(r, quant.Q8_0, 1, cols), cols)
		for _, q := range []byte{0x80, 0x7f} {
			act := randomRows(r, quant.Q8_0, 1, cols)
			for b := 0; b < cols/32; b++ {
				for i := 2; i < 34; i++ {
					act[34*b+i] = q
				}
			}
			check("extreme", act, cols)
		}
	}
	const cols = 1 << 16 * 64
	act := randomRows(r, quant.Q8_0, 1, cols)
	for h := 0; h < 1<<16; h++ {
		binary.LittleEndian.PutUint16(act[68*h:], uint16(h))
		binary.LittleEndian.PutUint16(act[68*h+34:], uint16(h)^0x8001)
	}
	check("every float16", act, cols)
}

// BenchmarkPrepRotX8Asm measures prepRotX8Asm on a 4096-element
// activation (BenchmarkPrepRotX8 is the Go loop).
func BenchmarkPrepRotX8Asm(b *testing.B) {
	act := randomRows(rand.New(rand.NewPCG(1, 2)), quant.Q8_0, 1, 4096)
	var buf []byte
	for b.Loop() {
		buf = prepRotX8Asm(buf, act, 4096)
	}
}
