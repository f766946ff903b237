package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/x448/float16"
)

// TestFastDots checks the dot products of fastdot.go against their
// lane-by-lane definitions, bit for bit, on random blocks (random quants,
// random finite scales, activations quantized from data of a wide dynamic
// range) and on blocks of extreme quants. Random F32/F16 rows hold NaNs
// and infinities; a NaN result only has to be a NaN.
func TestFastDots(t *testing.T) {
	cases := []struct {
		name       string
		typ        Type
		fast, spec func(n int, w, act []byte) float32
		scales     []int // byte offsets of fp16 scales in a weight block
	}{
		{"Q4_0", Q4_0, dotQ4_0, specQ4_0, []int{0}},
		{"Q4_0Gemv", Q4_0, DotQ4_0Gemv, specQ4_0Gemv, []int{0}},
		{"Q8_0", Q8_0, dotQ8_0, specQ8_0, []int{0}},
		{"Q4_K", Q4_K, dotQ4_K, specQ4_K, []int{0, 2}},
		{"Q6_K", Q6_K, dotQ6_K, specQ6_K, []int{208}},
		{"F16", F16, dotF16, specF16, nil},
		{"F32", F32, dotF32, specF32, nil},
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, c := range cases {
		tt, _ := Lookup(c.typ)
		at, _ := Lookup(tt.VecDot)
		for _, nb := range []int{1, 2, 3, 8, 24, 37, 100} {
			for _, fill := range []string{"random", "max", "min"} {
				t.Run(fmt.Sprintf("%s/%d/%s", c.name, nb, fill), func(t *testing.T) {
					n := nb * tt.BlockSize
					for rep := 0; rep < 20; rep++ {
						w := make([]byte, nb*tt.BlockBytes)
						for i := range w {
							switch fill {
							case "random":
								w[i] = byte(rng.Uint32())
							case "max":
								w[i] = 0x7f
							case "min":
								w[i] = 0x80
							}
						}
						for b := 0; b < nb; b++ {
							for _, o := range c.scales {
								put16(w[b*tt.BlockBytes+o:], FP32ToFP16(float32(rng.NormFloat64()*math.Ldexp(1, rng.IntN(20)-14))))
							}
						}
						x := make([]float32, n)
						for i := range x {
							x[i] = float32(rng.NormFloat64() * math.Ldexp(1, rng.IntN(16)-8))
							if fill != "random" {
								x[i] = float32(math.Copysign(1e3, float64(fill[1]-'i'))) // all ±max
							}
						}
						act := make([]byte, nb*at.BlockBytes)
						at.Quantize(act, x)
						got, want := c.fast(n, w, act), c.spec(n, w, act)
						if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) { // NaN payloads may differ
							t.Fatalf("got %g (%#x), want %g (%#x)", got, math.Float32bits(got), want, math.Float32bits(want))
						}
					}
				})
			}
		}
	}
}

// TestFP16ToFP32 checks every fp16 value against package float16's
// conversion.
func TestFP16ToFP32(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		got, want := FP16ToFP32(uint16(h)), float16.Frombits(uint16(h)).Float32()
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("FP16ToFP32(%#04x) = %#x, want %#x", h, math.Float32bits(got), math.Float32bits(want))
		}
	}
}
