package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// randF16Rows returns n random half-precision values (as bits) of about
// unit size, with some zeros, subnormals and large values mixed in.
func randF16Rows(rng *rand.Rand, n int) []uint16 {
	w := make([]uint16, n)
	for i := range w {
		v := float32(rng.NormFloat64())
		switch rng.IntN(20) {
		case 0:
			v = 0
		case 1:
			v *= 1e-6 // subnormal in f16
		case 2:
			v *= 1000
		}
		w[i] = quant.FP32ToFP16(v)
	}
	return w
}

// TestRoundF16Tiers checks RoundF16 and F16FromF32 on every tier against
// the scalar conversion, over values around every binade of half
// precision, ties and the overflow threshold.
func TestRoundF16Tiers(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var src []float32
	for e := -30; e <= 17; e++ {
		for range 64 {
			src = append(src, float32(math.Ldexp(rng.Float64()*2-1, e)))
		}
	}
	for h := 0; h < 1<<16; h += 97 { // halfway points between neighbours
		a, b := quant.FP16ToFP32(uint16(h)), quant.FP16ToFP32(uint16(h+1))
		if !math.IsNaN(float64(a)) && !math.IsNaN(float64(b)) && !math.IsInf(float64(b), 0) {
			src = append(src, a, (a+b)/2, math.Nextafter32((a+b)/2, a), math.Nextafter32((a+b)/2, b))
		}
	}
	src = append(src, 65504, 65519.99, 65520, 1e9, float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)))
	for len(src)%8 != 5 { // leave a scalar tail
		src = append(src, 0.1)
	}
	defer SetTier(DefaultTier().Name())
	for _, tier := range Tiers() {
		if err := SetTier(tier); err != nil {
			t.Fatal(err)
		}
		bits := make([]uint16, len(src))
		F16FromF32(bits, src)
		rounded := append([]float32(nil), src...)
		RoundF16(rounded)
		for i, v := range src {
			want := quant.FP32ToFP16(v)
			if bits[i] != want {
				t.Fatalf("%s: F16FromF32(%g) = %#04x, want %#04x", tier, v, bits[i], want)
			}
			if got, w := math.Float32bits(rounded[i]), math.Float32bits(quant.FP16ToFP32(want)); got != w {
				t.Fatalf("%s: RoundF16(%g) = %g, want %g", tier, v, rounded[i], quant.FP16ToFP32(want))
			}
		}
	}
}

// TestDotF16RowsTiers checks DotF16Rows and DotF16RowsPadded on every tier
// against the scalar definitions bit for bit, over lengths with and
// without tails, strides wider than a row, and row counts past a multiple
// of eight. DotF16Rows must also equal
// quant's F16 dot product (ggml_vec_dot_f16) when x holds f16 values.
func TestDotF16RowsTiers(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	trF16, _ := quant.Lookup(quant.F16)
	defer SetTier(DefaultTier().Name())
	for _, tier := range Tiers() {
		if err := SetTier(tier); err != nil {
			t.Fatal(err)
		}
		for _, cols := range []int{1, 5, 8, 9, 16, 24, 31, 32, 33, 40, 63, 64, 65, 100, 128, 192, 257} {
			for _, stride := range []int{cols, (cols + 7) &^ 7, cols + 13, 3 * cols} {
				rows := 19 // two blocks of the avx512 kernel's eight, and three
				w := randF16Rows(rng, (rows-1)*stride+(cols+7)&^7+1)
				x := make([]float32, cols)
				for i := range x {
					x[i] = float32(rng.NormFloat64())
				}
				RoundF16(x)
				xb := make([]byte, 2*cols)
				for i, v := range x {
					b := quant.FP32ToFP16(v)
					xb[2*i], xb[2*i+1] = byte(b), byte(b>>8)
				}
				out := make([]float32, rows)
				if stride >= cols {
					DotF16Rows(out, w, stride, x)
					for r := range out {
						row := w[r*stride : r*stride+cols]
						want := dotF16Row(row, x, false)
						if math.Float32bits(out[r]) != math.Float32bits(want) {
							t.Fatalf("%s: DotF16Rows cols %d stride %d row %d = %g, want %g", tier, cols, stride, r, out[r], want)
						}
						wb := make([]byte, 2*cols)
						for i, v := range row {
							wb[2*i], wb[2*i+1] = byte(v), byte(v>>8)
						}
						if q := trF16.Dot(cols, wb, xb); math.Float32bits(q) != math.Float32bits(want) {
							t.Fatalf("DotF16Rows cols %d row %d = %g, quant F16 dot %g", cols, r, want, q)
						}
					}
				}
				// Poison w past each row: the padded dot must not count it.
				for r := range rows {
					for i := cols; i < min((cols+7)&^7, stride) && r*stride+i < len(w); i++ {
						w[r*stride+i] = 0x7e00 // NaN
					}
				}
				DotF16RowsPadded(out, w, stride, x)
				for r := range out {
					want := dotF16Row(w[r*stride:r*stride+cols], x, true)
					if math.Float32bits(out[r]) != math.Float32bits(want) || math.IsNaN(float64(want)) {
						t.Fatalf("%s: DotF16RowsPadded cols %d stride %d row %d = %g, want %g", tier, cols, stride, r, out[r], want)
					}
					// Padding with zeros to 32 gives the same sum.
					pc := (cols + 31) &^ 31
					wp, xp := make([]uint16, pc), make([]float32, pc)
					copy(wp, w[r*stride:r*stride+cols])
					copy(xp, x)
					if z := dotF16Row(wp, xp, false); z != want {
						t.Fatalf("DotF16RowsPadded cols %d row %d = %g, zero-padded dot %g", cols, r, want, z)
					}
				}
			}
		}
	}
}

func TestDotF16RowsPanics(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"short w", func() { DotF16Rows(make([]float32, 2), make([]uint16, 10), 8, make([]float32, 8)) }},
		{"narrow stride", func() { DotF16Rows(make([]float32, 2), make([]uint16, 100), 4, make([]float32, 8)) }},
		{"padded group past w", func() { DotF16RowsPadded(make([]float32, 1), make([]uint16, 5), 5, make([]float32, 5)) }},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", tc.name)
				}
			}()
			tc.f()
		}()
	}
}

func TestVecF16NoAllocs(t *testing.T) {
	x := make([]float32, 70)
	w := make([]uint16, 72*10)
	out := make([]float32, 10)
	if n := testing.AllocsPerRun(10, func() {
		RoundF16(x)
		DotF16Rows(out, w, 72, x)
		DotF16RowsPadded(out, w, 72, x)
	}); n != 0 {
		t.Errorf("%v allocations per run", n)
	}
}

func BenchmarkDotF16RowsPadded(b *testing.B) {
	const rows, n, stride = 64, 192, 256
	w := randF16Rows(rand.New(rand.NewPCG(1, 1)), rows*stride)
	x := make([]float32, n)
	for i := range x {
		x[i] = 1 / float32(n)
	}
	out := make([]float32, rows)
	b.SetBytes(rows * n * 2)
	for b.Loop() {
		DotF16RowsPadded(out, w, stride, x)
	}
}

func BenchmarkDotF16Rows(b *testing.B) {
	const rows, n = 192, 64
	w := randF16Rows(rand.New(rand.NewPCG(1, 1)), rows*n*12)
	x := make([]float32, n)
	out := make([]float32, rows)
	b.SetBytes(rows * n * 2)
	for b.Loop() {
		DotF16Rows(out, w, n*12, x)
	}
}

// BenchmarkDotF16RowsPaddedMem reads transposed values as attention over
// 550 positions does, from a cache much larger than the CPU's: 64 rows per
// call, rows 2048 bytes apart, every call on fresh memory.
func BenchmarkDotF16RowsPaddedMem(b *testing.B) {
	const rows, n, stride, heads = 64, 550, 1024, 144
	w := randF16Rows(rand.New(rand.NewPCG(1, 1)), heads*rows*stride)
	x := make([]float32, n)
	for i := range x {
		x[i] = 1 / float32(n)
	}
	out := make([]float32, rows)
	b.SetBytes(rows * n * 2)
	h := 0
	for b.Loop() {
		DotF16RowsPadded(out, w[h*rows*stride:], stride, x)
		h = (h + 1) % heads
	}
}

// BenchmarkDotF16RowsMem reads keys as attention over 550 positions does,
// head by head, from a cache much larger than the CPU's.
func BenchmarkDotF16RowsMem(b *testing.B) {
	const rows, n, heads = 550, 64, 144
	w := randF16Rows(rand.New(rand.NewPCG(1, 1)), heads*1024*n)
	x := make([]float32, n)
	out := make([]float32, rows)
	b.SetBytes(rows * n * 2)
	h := 0
	for b.Loop() {
		DotF16Rows(out, w[h*1024*n:], n, x)
		h = (h + 1) % heads
	}
}

// FuzzDotF16Rows checks that the current tier's DotF16Rows and
// DotF16RowsPadded equal the scalar definitions bit for bit (NaN for NaN)
// on arbitrary f16 rows and vectors, including infinities, NaNs and
// subnormals.
func FuzzDotF16Rows(f *testing.F) {
	f.Add(uint8(3), uint8(40), uint8(5), make([]byte, 400))
	f.Add(uint8(1), uint8(7), uint8(0), []byte{0, 0x3c, 0, 0xbc, 1, 0, 0xff, 0x7b})
	f.Fuzz(func(t *testing.T, rows, cols, gap uint8, data []byte) {
		r, n := int(rows%8)+1, int(cols)
		stride := n + int(gap%40)
		span := (n + 7) &^ 7
		need := (r-1)*stride + max(span, n) + n // rows, then x
		if n == 0 || len(data) < 2*need {
			return
		}
		h := make([]uint16, need)
		for i := range h {
			h[i] = uint16(data[2*i]) | uint16(data[2*i+1])<<8
		}
		w := h[:(r-1)*stride+max(span, n)]
		x := make([]float32, n)
		for i := range x {
			x[i] = quant.FP16ToFP32(h[len(w)+i])
		}
		same := func(a, b float32) bool {
			return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
		}
		out := make([]float32, r)
		DotF16Rows(out, w, stride, x)
		for i := range out {
			if want := dotF16Row(w[i*stride:i*stride+n], x, false); !same(out[i], want) {
				t.Fatalf("DotF16Rows row %d of %d×%d (stride %d) = %g, want %g", i, r, n, stride, out[i], want)
			}
		}
		DotF16RowsPadded(out, w, stride, x)
		for i := range out {
			if want := dotF16Row(w[i*stride:i*stride+n], x, true); !same(out[i], want) {
				t.Fatalf("DotF16RowsPadded row %d of %d×%d (stride %d) = %g, want %g", i, r, n, stride, out[i], want)
			}
		}
	})
}

// TestF16HeadsTiers checks DotF16Heads and ValuesF16Heads on every tier
// against what they are defined as, bit for bit: DotF16Rows of each head
// on the generic tier, and DotF16RowsPadded of each head's weights with
// its values transposed (llama.cpp's f16 value cache). Shapes cover head
// widths of 5 to 128 (tails of 32 and of 8), grouped heads, 0 to 300
// positions (partial lane rounds), padded rows, specials (±0, subnormals,
// ±Inf, NaN), rows of −0 products only, and queries and weights that are
// not half-precision values (whose products the kernels must not round).
func TestF16HeadsTiers(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	specials := []uint16{0, 0x8000, 0x0001, 0x83ff, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00}
	special := false
	half := func(n int) []uint16 {
		v := make([]uint16, n)
		for i := range v {
			v[i] = quant.FP32ToFP16(float32(rng.NormFloat64()))
			if special && rng.IntN(40) == 0 {
				v[i] = specials[rng.IntN(len(specials))]
			}
		}
		return v
	}
	raw := false // float32 vectors, not half-precision values
	vec := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = quant.FP16ToFP32(quant.FP32ToFP16(float32(rng.NormFloat64())))
			if raw {
				v[i] = float32(rng.NormFloat64())
			}
			if special && rng.IntN(40) == 0 {
				v[i] = quant.FP16ToFP32(specials[rng.IntN(len(specials))])
			}
		}
		return v
	}
	type shape struct{ d, heads, group, g0, n, pad int }
	tests := []shape{
		{64, 12, 1, 0, 36, 0}, {64, 6, 1, 0, 1, 0}, {64, 5, 2, 1, 70, 3}, {32, 7, 3, 2, 33, 1},
		{128, 3, 4, 0, 64, 0}, {40, 4, 1, 0, 31, 8}, {8, 9, 2, 0, 40, 0}, {5, 3, 1, 0, 12, 2},
		{64, 4, 2, 1, 0, 0}, {96, 2, 1, 0, 100, 0}, {16, 3, 1, 0, 57, 0}, {48, 2, 2, 0, 97, 5},
		{80, 2, 1, 0, 45, 0}, {64, 12, 1, 0, 200, 0},
	}
	for n := 1; n <= 41; n++ {
		tests = append(tests, shape{64, 3, 1, 0, n, 0}, shape{16, 2, 2, 1, n, 1})
	}
	// The amd64 kernels' edges: blocks of 8 positions, rounds of 32
	// lanes, heads of one, two and more chunks of 32 columns (and a last
	// 16), many rounds.
	for _, n := range []int{7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 95, 96, 97, 300} {
		for _, d := range []int{16, 32, 48, 64, 128} {
			tests = append(tests, shape{d, 3, 2, 1, n, d % 3})
		}
	}
	for _, n := range []int{1, 7, 31, 32, 33, 65, 100} { // heads of 8 + 16k columns
		for _, d := range []int{8, 24, 40, 80, 120} {
			tests = append(tests, shape{d, 3, 2, 1, n, d % 3})
		}
	}
	for _, tier := range Tiers() {
		tr, err := TierNamed(tier)
		if err != nil {
			t.Fatal(err)
		}
		for i, tc := range tests {
			special = i%2 == 1
			// Products of halves are exact in float32; vectors used as
			// given (not rounded to halves) tell fused from unfused.
			raw = i%3 == 0
			kvs := (tc.g0+tc.heads-1)/tc.group + 1
			stride := (kvs+1)*tc.d + tc.pad // a head more than the call reads
			keys := half(max(tc.n, 1) * stride)
			q := vec(tc.heads * tc.d)
			if i%4 == 2 { // products of −0 only: their lanes start from +0
				clear(keys)
				for i := range q {
					q[i] = -1
				}
			}
			ostride := tc.n + 3
			out := vec(tc.heads * ostride)
			want := append([]float32(nil), out...)
			var next []uint16
			if tc.pad%2 == 0 {
				next = half(len(keys)) // fetched, not read
			}
			tr.DotF16Heads(out, ostride, keys, stride, tc.n, q, tc.d, tc.group, tc.g0, next)
			for j := range tc.heads {
				kv := (tc.g0 + j) / tc.group
				genericTier.DotF16Rows(want[j*ostride:j*ostride+tc.n], keys[kv*tc.d:], stride, q[j*tc.d:(j+1)*tc.d])
			}
			for i := range out {
				if !sameF32(out[i], want[i]) {
					t.Fatalf("%s: DotF16Heads %+v element %d = %g (%#x), want %g (%#x)", tier, tc, i, out[i], math.Float32bits(out[i]), want[i], math.Float32bits(want[i]))
				}
			}
			// The values: keys as values, weights p; the reference is
			// each head's transposed values, padded to 32 positions.
			p := vec(tc.heads * ostride)
			if i%4 == 2 {
				for i := range p {
					p[i] = 1
				}
			}
			vals := vec(tc.heads * tc.d) // garbage to be overwritten
			lanes := vec(tc.heads * 32 * tc.d)
			tr.ValuesF16Heads(vals, lanes, keys, stride, tc.n, p, ostride, tc.d, tc.group, tc.g0)
			tstride := (tc.n + 31) &^ 31
			vt := half(tc.d * max(tstride, 1)) // padding: garbage the lanes do not read
			wantVals := make([]float32, len(vals))
			for j := range tc.heads {
				kv := (tc.g0 + j) / tc.group
				for c := range tc.d {
					for s := range tc.n {
						vt[c*tstride+s] = keys[s*stride+kv*tc.d+c]
					}
				}
				genericTier.DotF16RowsPadded(wantVals[j*tc.d:(j+1)*tc.d], vt, max(tstride, 1), p[j*ostride:j*ostride+tc.n])
			}
			for i := range vals {
				if !sameF32(vals[i], wantVals[i]) {
					t.Fatalf("%s: ValuesF16Heads %+v element %d = %g (%#x), want %g (%#x)", tier, tc, i, vals[i], math.Float32bits(vals[i]), wantVals[i], math.Float32bits(wantVals[i]))
				}
			}
		}
	}
}
