package kernels

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// TestVecF32Tiers checks DotF32Rows and AxpyF32 on every tier against the
// scalar definitions, bit for bit, over odd lengths and strides.
func TestVecF32Tiers(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	vec := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	defer SetTier(DefaultTier().Name())
	for _, tier := range Tiers() {
		if err := SetTier(tier); err != nil {
			t.Fatal(err)
		}
		for _, cols := range []int{1, 7, 8, 16, 31, 32, 33, 64, 100, 128} {
			for _, stride := range []int{cols, cols + 5, 3 * cols} {
				rows := 11
				w, x := vec((rows-1)*stride+cols), vec(cols)
				out := make([]float32, rows)
				DotF32Rows(out, w, stride, x)
				tr, _ := quant.Lookup(quant.F32)
				for r := range out {
					want := tr.Dot(cols, f32Bytes(w[r*stride:r*stride+cols]), f32Bytes(x))
					if math.Float32bits(out[r]) != math.Float32bits(want) {
						t.Fatalf("%s: DotF32Rows cols %d stride %d row %d = %g, want %g", tier, cols, stride, r, out[r], want)
					}
				}
			}
			y, x := vec(cols), vec(cols)
			want := append([]float32(nil), y...)
			a := float32(rng.NormFloat64())
			for i := range want {
				want[i] = quant.FMA32(x[i], a, want[i])
			}
			AxpyF32(y, x, a)
			for i := range y {
				if math.Float32bits(y[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s: AxpyF32 n %d element %d = %g, want %g", tier, cols, i, y[i], want[i])
				}
			}
		}
	}
}

func TestVecF32NoAllocs(t *testing.T) {
	x := make([]float32, 64)
	w := make([]float32, 64*10)
	out := make([]float32, 10)
	if n := testing.AllocsPerRun(100, func() {
		DotF32Rows(out, w, 64, x)
		AxpyF32(x, w[:64], 0.5)
	}); n != 0 {
		t.Errorf("%v allocations", n)
	}
}

// TestLanesF32Tiers checks LanesF32 and ReduceLanes32F32 on every tier
// against their scalar definitions, bit for bit.
func TestLanesF32Tiers(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	vec := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	defer SetTier(DefaultTier().Name())
	tests := []struct{ width, cols, stride, n int }{
		{32, 64, 64, 0}, {32, 64, 64, 1}, {32, 64, 256, 80}, {32, 128, 128, 33},
		{32, 8, 24, 70}, {32, 72, 80, 100}, {32, 5, 7, 40}, {8, 64, 192, 19},
		{8, 96, 96, 64}, {1, 16, 16, 9},
	}
	for _, tier := range Tiers() {
		if err := SetTier(tier); err != nil {
			t.Fatal(err)
		}
		for _, tc := range tests {
			x := vec(max(tc.n-1, 0)*tc.stride + tc.cols)
			p := vec(tc.n)
			lanes := vec(tc.width * tc.cols) // garbage to be overwritten
			want := make([]float32, len(lanes))
			for i, a := range p {
				l := i % tc.width
				for c := range tc.cols {
					want[l*tc.cols+c] = quant.FMA32(x[i*tc.stride+c], a, want[l*tc.cols+c])
				}
			}
			LanesF32(lanes, tc.width, x, tc.stride, p)
			for i := range lanes {
				if math.Float32bits(lanes[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s: LanesF32 %+v element %d = %g, want %g", tier, tc, i, lanes[i], want[i])
				}
			}
			if tc.width != 32 {
				continue
			}
			out := make([]float32, tc.cols)
			ReduceLanes32F32(out, lanes)
			for c := range out {
				var acc [32]float32
				for l := range acc {
					acc[l] = lanes[l*tc.cols+c]
				}
				var x [8]float32
				for l := range 8 {
					x[l] = (acc[l] + acc[16+l]) + (acc[8+l] + acc[24+l])
				}
				w := ((x[0] + x[4]) + (x[1] + x[5])) + ((x[2] + x[6]) + (x[3] + x[7]))
				if math.Float32bits(out[c]) != math.Float32bits(w) {
					t.Fatalf("%s: ReduceLanes32F32 %+v column %d = %g, want %g", tier, tc, c, out[c], w)
				}
			}
		}
	}
}

// TestRotateF32Tiers checks RotateF32 on every tier against its scalar
// definition, bit for bit, in both pair layouts.
func TestRotateF32Tiers(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	defer SetTier(DefaultTier().Name())
	tests := []struct{ dims, step, off int }{
		{2, 2, 1}, {64, 2, 1}, {128, 2, 1}, {64, 1, 32}, {128, 1, 64}, {6, 1, 3},
	}
	for _, tier := range Tiers() {
		if err := SetTier(tier); err != nil {
			t.Fatal(err)
		}
		for _, tc := range tests {
			v, cs := make([]float32, tc.dims+3), make([]float32, tc.dims)
			for i := range v {
				v[i] = float32(rng.NormFloat64() * 10)
			}
			for i := 0; i < tc.dims; i += 2 {
				a := rng.Float64() * 100
				cs[i], cs[i+1] = float32(math.Cos(a)), float32(math.Sin(a))
			}
			want := append([]float32(nil), v...)
			for i := range tc.dims / 2 {
				a, b := i*tc.step, i*tc.step+tc.off
				x0, x1 := want[a], want[b]
				want[a] = quant.FMA32(x0, cs[2*i], -(x1 * cs[2*i+1]))
				want[b] = quant.FMA32(x0, cs[2*i+1], x1*cs[2*i])
			}
			RotateF32(v, cs, tc.step, tc.off)
			for i := range v {
				if math.Float32bits(v[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s: RotateF32 %+v element %d = %g, want %g", tier, tc, i, v[i], want[i])
				}
			}
		}
	}
}

// TestRotate64Tiers checks Rotate64 of every tier bit for bit against
// quant.Rotate64 on random data with zeros, signed zeros, subnormals,
// infinities and NaNs, for 0 to 5 blocks and a partial block after them
// (left alone).
func TestRotate64Tiers(t *testing.T) {
	r := rand.New(rand.NewPCG(91, 92))
	special := []float32{0, float32(math.Copysign(0, -1)), 1e-41, -1e-45, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 3.4e38, -3.4e38}
	for _, tr := range available {
		for _, n := range []int{0, 5, 64, 128, 130, 320} {
			for trial := 0; trial < 20; trial++ {
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(20)-10)))
					if r.IntN(20) == 0 {
						x[i] = special[r.IntN(len(special))]
					}
				}
				want := slices.Clone(x)
				quant.Rotate64(want)
				tr.Rotate64(x)
				for i := range x {
					if math.Float32bits(x[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s: n=%d element %d: %g (%#x), want %g (%#x)", tr.Name(), n, i, x[i], math.Float32bits(x[i]), want[i], math.Float32bits(want[i]))
					}
				}
			}
		}
	}
}

// TestF32HeadsTiers checks DotF32Heads, LanesF32Heads and ValuesF32Heads
// on every tier against DotF32Rows, LanesF32 and ReduceLanes32F32 of the
// generic tier on each head, bit for bit, with grouped heads, odd widths,
// strides, every position count up to 41 and beyond, and (in every other
// case) zeros, signed zeros, subnormals, huge values, infinities and NaNs
// among the keys, values, queries and weights (any NaN for a NaN: sameF32).
func TestF32HeadsTiers(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	special := []float32{0, float32(math.Copysign(0, -1)), 1e-41, -1e-45, 3e38, -3e38,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), -float32(math.NaN())}
	specials := false
	vec := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
			if specials && rng.IntN(40) == 0 {
				v[i] = special[rng.IntN(len(special))]
			}
		}
		return v
	}
	defer SetTier(DefaultTier().Name())
	type shape struct{ d, heads, group, g0, n, pad int }
	tests := []shape{
		{64, 12, 1, 0, 36, 0}, {64, 6, 1, 0, 1, 0}, {64, 5, 2, 1, 70, 3}, {32, 7, 3, 2, 33, 1},
		{128, 3, 4, 0, 64, 0}, {40, 4, 1, 0, 31, 8}, {8, 9, 2, 0, 40, 0}, {5, 3, 1, 0, 12, 2},
		{64, 4, 2, 1, 0, 0}, {96, 2, 1, 0, 100, 0}, {16, 3, 1, 0, 57, 0}, {48, 2, 2, 0, 97, 5},
		{64, 12, 1, 0, 200, 0},
	}
	for n := 1; n <= 41; n++ {
		tests = append(tests, shape{64, 3, 1, 0, n, 0}, shape{16, 2, 2, 1, n, 1})
	}
	for _, tier := range Tiers() {
		tr, err := TierNamed(tier)
		if err != nil {
			t.Fatal(err)
		}
		for i, tc := range tests {
			specials = i%2 == 1
			kvs := (tc.g0+tc.heads-1)/tc.group + 1
			stride := (kvs+1)*tc.d + tc.pad // a head more than the call reads
			keys := vec(max(tc.n, 1) * stride)
			q := vec(tc.heads * tc.d)
			ostride := tc.n + 3
			out := vec(tc.heads * ostride)
			want := append([]float32(nil), out...)
			var next []float32
			if tc.pad%2 == 0 {
				next = vec(len(keys)) // fetched, not read
			}
			if i%4 == 2 { // products of −0 only: their lanes start from +0
				for i := range keys {
					keys[i] = 0
				}
				for i := range q {
					q[i] = -1
				}
			}
			tr.DotF32Heads(out, ostride, keys, stride, tc.n, q, tc.d, tc.group, tc.g0, next)
			for j := range tc.heads {
				kv := (tc.g0 + j) / tc.group
				genericTier.DotF32Rows(want[j*ostride:j*ostride+tc.n], keys[kv*tc.d:], stride, q[j*tc.d:(j+1)*tc.d])
			}
			for i := range out {
				if !sameF32(out[i], want[i]) {
					t.Fatalf("%s: DotF32Heads %+v element %d = %g (%#x), want %g (%#x)", tier, tc, i, out[i], math.Float32bits(out[i]), want[i], math.Float32bits(want[i]))
				}
			}
			p := vec(tc.heads * ostride)
			lanes := vec(tc.heads * 32 * tc.d) // garbage to be overwritten
			wantLanes := make([]float32, len(lanes))
			tr.LanesF32Heads(lanes, keys, stride, tc.n, p, ostride, tc.d, tc.group, tc.g0)
			for j := range tc.heads {
				kv := (tc.g0 + j) / tc.group
				genericTier.LanesF32(wantLanes[j*32*tc.d:(j+1)*32*tc.d], 32, keys[kv*tc.d:], stride, p[j*ostride:j*ostride+tc.n])
			}
			for i := range lanes {
				if !sameF32(lanes[i], wantLanes[i]) {
					t.Fatalf("%s: LanesF32Heads %+v element %d = %g (%#x), want %g (%#x)", tier, tc, i, lanes[i], math.Float32bits(lanes[i]), wantLanes[i], math.Float32bits(wantLanes[i]))
				}
			}
			vals := vec(tc.heads * tc.d) // garbage to be overwritten
			wantVals := make([]float32, len(vals))
			for j := range tc.heads {
				genericTier.ReduceLanes32F32(wantVals[j*tc.d:(j+1)*tc.d], wantLanes[j*32*tc.d:(j+1)*32*tc.d])
			}
			tr.ValuesF32Heads(vals, lanes, keys, stride, tc.n, p, ostride, tc.d, tc.group, tc.g0)
			for i := range vals {
				if !sameF32(vals[i], wantVals[i]) {
					t.Fatalf("%s: ValuesF32Heads %+v element %d = %g (%#x), want %g (%#x)", tier, tc, i, vals[i], math.Float32bits(vals[i]), wantVals[i], math.Float32bits(wantVals[i]))
				}
			}
		}
	}
}

// sameF32 reports whether a and b have the same bits or are both NaN: the
// tiers' sums propagate a NaN's sign and payload from different operands
// (the avx2 DotF32Rows gives +NaN where generic gives −NaN, for one).
func sameF32(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b
}

// TestMulAddF32Tiers checks MulF32 and AddF32 on every tier against the
// float32 operations, bit for bit, over odd lengths.
func TestMulAddF32Tiers(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, tier := range Tiers() {
		tr, err := TierNamed(tier)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{0, 1, 7, 8, 9, 31, 32, 33, 100, 2048} {
			dst, x := make([]float32, n), make([]float32, n+3)
			for i := range dst {
				dst[i] = float32(rng.NormFloat64())
			}
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			mul, add := append([]float32(nil), dst...), append([]float32(nil), dst...)
			tr.MulF32(mul, x)
			tr.AddF32(add, x)
			for i := range dst {
				if m, a := dst[i]*x[i], dst[i]+x[i]; math.Float32bits(mul[i]) != math.Float32bits(m) || math.Float32bits(add[i]) != math.Float32bits(a) {
					t.Fatalf("%s: n %d element %d: MulF32 %g, AddF32 %g, want %g, %g", tier, n, i, mul[i], add[i], m, a)
				}
			}
		}
	}
}
