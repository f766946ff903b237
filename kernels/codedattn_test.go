package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// codedVec returns n normal values, with ±0, subnormals, huge values
// (whose products overflow), ±Inf and NaN mixed in when special.
func codedVec(rng *rand.Rand, n int, special bool) []float32 {
	specials := []float32{0, float32(math.Copysign(0, -1)), 1e-45, -3e-39, 3e38, -3e38,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64()) * 4
		if special && rng.IntN(30) == 0 {
			v[i] = specials[rng.IntN(len(specials))]
		}
	}
	return v
}

// TestLanesDotSeqTiers checks LanesDotSeq on every tier, bit for bit,
// against its definition: each lane's dot product with each key as a
// sequential float32 loop over the elements (the coded KV cache's
// scores). Shapes cover 1 to 13 keys (the blocks of four and the rest),
// widths of 1 to 257 elements, keys apart by more than their width,
// and specials (±0, subnormals, overflowing products, ±Inf, NaN).
func TestLanesDotSeqTiers(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 16))
	type shape struct{ n, d, pad int }
	var tests []shape
	for n := 1; n <= 13; n++ {
		for _, d := range []int{1, 2, 7, 8, 9, 64, 128} {
			tests = append(tests, shape{n, d, n % 3})
		}
	}
	tests = append(tests, shape{100, 64, 0}, shape{9, 257, 5}, shape{0, 64, 0}, shape{3, 0, 2})
	for _, special := range []bool{false, true} {
		for _, tc := range tests {
			stride := tc.d + tc.pad
			q := codedVec(rng, 8*tc.d, special)
			keys := codedVec(rng, max(0, tc.n*stride), special)
			want := make([]float32, 8*tc.n)
			for k := range tc.n {
				for h := range 8 {
					var dot float32
					for i := range tc.d {
						dot += float32(q[8*i+h] * keys[k*stride+i])
					}
					want[8*k+h] = dot
				}
			}
			for _, name := range Tiers() {
				tr, err := TierNamed(name)
				if err != nil {
					t.Fatal(err)
				}
				out := codedVec(rng, 8*tc.n+3, false) // garbage to overwrite
				tr.LanesDotSeq(out, q, keys, stride, tc.n, tc.d)
				for i, w := range want {
					if !sameBits(out[i], w) {
						t.Fatalf("%s: %+v special=%v: out[%d] = %g (%#x), want %g (%#x)", name, tc, special, i, out[i], math.Float32bits(out[i]), w, math.Float32bits(w))
					}
				}
			}
		}
	}
}

// TestAddScaledHeadsTiers checks AddScaledHeads on every tier, bit for
// bit, against its definition (the coded KV cache's weighted values),
// with and without offsets: 1 to 9 heads, 1 to 9 values, rows of 1 to
// 130 elements (blocks of 32, tails of 8 and less), rows apart by more
// than their width, and specials in the values, weights and offsets.
func TestAddScaledHeadsTiers(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 17))
	type shape struct{ heads, m, d, pad int }
	var tests []shape
	for heads := 1; heads <= 9; heads += 2 {
		for _, d := range []int{1, 5, 8, 15, 16, 17, 31, 32, 33, 64, 100, 130} {
			tests = append(tests, shape{heads, 1 + (heads+d)%9, d, heads % 2 * 3})
		}
	}
	tests = append(tests, shape{0, 2, 8, 0}, shape{2, 0, 8, 1}, shape{8, 8, 64, 0}, shape{3, 1, 64, 0})
	for _, special := range []bool{false, true} {
		for _, offsets := range []bool{false, true} {
			for _, tc := range tests {
				stride := tc.d + tc.pad
				v := codedVec(rng, tc.m*tc.d, special)
				scale := codedVec(rng, tc.m*tc.heads, special)
				var offset []float32
				if offsets {
					offset = codedVec(rng, tc.m*tc.heads, special)
				}
				out0 := codedVec(rng, max(0, tc.heads*stride), special)
				want := append([]float32(nil), out0...)
				for h := range tc.heads {
					for k := range tc.m {
						for i, c := range v[k*tc.d:][:tc.d] {
							if offsets {
								want[h*stride+i] += float32(scale[k*tc.heads+h]*c) + offset[k*tc.heads+h]
							} else {
								want[h*stride+i] += float32(scale[k*tc.heads+h] * c)
							}
						}
					}
				}
				for _, name := range Tiers() {
					tr, err := TierNamed(name)
					if err != nil {
						t.Fatal(err)
					}
					out := append([]float32(nil), out0...)
					tr.AddScaledHeads(out, stride, v, tc.d, scale, offset, tc.heads)
					for i, w := range want {
						if !sameBits(out[i], w) {
							t.Fatalf("%s: %+v special=%v offsets=%v: out[%d] = %g (%#x), want %g (%#x)", name, tc, special, offsets, i, out[i], math.Float32bits(out[i]), w, math.Float32bits(w))
						}
					}
				}
			}
		}
	}
}

// TestDecodeQ4Tiers checks DecodeQ4 on every tier, bit for bit, against
// its definition, with and without the per-channel scales and offsets:
// 1 to 70 elements (blocks of 16, odd tails ending in a low nibble),
// random bytes, and specials in the scales and offsets.
func TestDecodeQ4Tiers(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 18))
	for _, special := range []bool{false, true} {
		for _, affine := range []bool{false, true} {
			for n := 0; n <= 70; n++ {
				codes := make([]byte, (n+1)/2+3)
				for i := range codes {
					codes[i] = byte(rng.Uint32())
				}
				var scale, offset []float32
				if affine {
					scale, offset = codedVec(rng, n, special), codedVec(rng, n, special)
				}
				want := make([]float32, n)
				for i := range want {
					c := float32(codes[i/2] >> (4 * (i % 2)) & 15)
					if affine {
						c = offset[i] + float32(scale[i]*c)
					}
					want[i] = c
				}
				for _, name := range Tiers() {
					tr, err := TierNamed(name)
					if err != nil {
						t.Fatal(err)
					}
					out := codedVec(rng, n+5, false)
					tr.DecodeQ4(out[:n], codes, scale, offset)
					for i, w := range want {
						if !sameBits(out[i], w) {
							t.Fatalf("%s: %d elements, special=%v affine=%v: dst[%d] = %g (%#x), want %g (%#x)", name, n, special, affine, i, out[i], math.Float32bits(out[i]), w, math.Float32bits(w))
						}
					}
				}
			}
		}
	}
}
