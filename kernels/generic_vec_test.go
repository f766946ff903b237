package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// The generic tier's attention and activation loops against their plain
// definitions, every fused multiply-add a call of quant.FMA32, bit for
// bit, on data that reaches their slow paths: float32 rounding midpoints
// (values of few mantissa bits), sums below the float32 normal range,
// subnormals, signed zeros, infinities, NaN and the extremes.

// dotF32Def is ggml_vec_dot_f32 on AVX2 with quant.FMA32 for each lane.
func dotF32Def(w, x []float32) float32 {
	np := len(x) &^ 31
	var acc [32]float32
	for i := 0; i < np; i += 32 {
		for l := range acc {
			acc[l] = quant.FMA32(w[i+l], x[i+l], acc[l])
		}
	}
	var sum float32
	if np > 0 {
		var t [8]float32
		for l := range t {
			t[l] = (acc[l] + acc[16+l]) + (acc[8+l] + acc[24+l])
		}
		sum = ((t[0] + t[4]) + (t[1] + t[5])) + ((t[2] + t[6]) + (t[3] + t[7]))
	}
	for i := np; i < len(x); i++ {
		sum += float32(w[i] * x[i])
	}
	return sum
}

// hardF32 returns a float32 meant to reach the fast paths' edges.
func hardF32(r *rand.Rand) float32 {
	special := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 0.5, 3,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32,
		-math.SmallestNonzeroFloat32, 0x1p-126, -0x1p-126, 0x1.fffffcp-127, 0x1p-75, 0x1p-70}
	switch r.IntN(8) {
	case 0:
		return special[r.IntN(len(special))]
	case 1, 2:
		// Few mantissa bits: sums of products of these are often
		// exact float32 rounding midpoints.
		return float32(r.IntN(1<<13)-1<<12) * float32(math.Ldexp(1, r.IntN(9)-4))
	case 3:
		// Few bits near the bottom of the normal range and below.
		return float32(r.IntN(1<<12)-1<<11) * 0x1p-75
	case 4:
		return float32(r.NormFloat64() * math.Ldexp(1, r.IntN(60)-30))
	default:
		return float32(r.NormFloat64())
	}
}

func hardVec(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = hardF32(r)
	}
	return v
}

// TestExpf8Exact checks expf8, its fast paths inlined, against expf8Exact
// for every kind of input, including the sums of fma32Rare's path.
func TestExpf8Exact(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	xs := append(expInputs(r, 200000), hardVec(r, 100000)...)
	for i := range 1 << 16 {
		// Every 2¹⁶th float32 over the whole range, both signs.
		xs = append(xs, math.Float32frombits(uint32(i)<<16|uint32(r.IntN(1<<16))))
	}
	for _, x := range xs {
		if got, want := expf8(x), expf8Exact(x); !sameBits(got, want) {
			t.Fatalf("expf8(%g = %#x) = %g (%#x), want %g (%#x)", x, math.Float32bits(x), got, math.Float32bits(got), want, math.Float32bits(want))
		}
	}
}

// TestGenericVecF32Exact checks the generic tier's DotF32Rows, AxpyF32,
// LanesF32 and SiluF32 against the definitions on hard data, and that
// the data reaches the slow paths (the midpoints and the sums below the
// normal range that fma32Fits turns away).
func TestGenericVecF32Exact(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	midpoints, tiny := 0, 0
	count := func(a, b, c float32) {
		s := float64(float64(a)*float64(b)) + float64(c)
		bits := math.Float64bits(s)
		if bits<<35 == 1<<63 {
			midpoints++
		} else if !fma32Fits(bits) {
			tiny++
		}
	}
	for iter := range 3000 {
		cols := []int{1, 5, 31, 32, 33, 63, 64, 65, 96, 128, 130}[iter%11]
		stride := cols + r.IntN(3)
		rows := 1 + r.IntN(5)
		w, x := hardVec(r, (rows-1)*stride+cols), hardVec(r, cols)
		if iter%3 == 0 {
			// Products of one size with sums that cancel.
			for i := range w {
				w[i] = float32(r.IntN(64)-32) * 0x1p-70
			}
		}
		out := make([]float32, rows)
		genericTier.DotF32Rows(out, w, stride, x)
		for j := range out {
			row := w[j*stride : j*stride+cols]
			want := dotF32Def(row, x)
			if !sameBits(out[j], want) {
				t.Fatalf("DotF32Rows cols %d row %d = %g (%#x), want %g (%#x)", cols, j, out[j], math.Float32bits(out[j]), want, math.Float32bits(want))
			}
			for i := 32; i < cols&^31; i++ {
				count(row[i], x[i], 1) // a stand-in for the lane's sum
			}
		}

		y, xv := hardVec(r, cols), hardVec(r, cols)
		a := hardF32(r)
		want := make([]float32, cols)
		for i := range want {
			want[i] = quant.FMA32(xv[i], a, y[i])
			count(xv[i], a, y[i])
		}
		genericTier.AxpyF32(y, xv, a)
		for i := range y {
			if !sameBits(y[i], want[i]) {
				t.Fatalf("AxpyF32 n %d element %d = %g, want %g", cols, i, y[i], want[i])
			}
		}

		width := []int{8, 32}[iter%2]
		n := r.IntN(3 * width)
		p := hardVec(r, n)
		xs := hardVec(r, max(n-1, 0)*stride+cols)
		lanes := hardVec(r, width*cols) // garbage that LanesF32 must overwrite
		wantL := make([]float32, width*cols)
		for tt, pa := range p {
			l := tt % width
			for c := range cols {
				wantL[l*cols+c] = quant.FMA32(xs[tt*stride+c], pa, wantL[l*cols+c])
			}
		}
		genericTier.LanesF32(lanes, width, xs, stride, p)
		for i := range lanes {
			if !sameBits(lanes[i], wantL[i]) {
				t.Fatalf("LanesF32 width %d n %d cols %d element %d = %g, want %g", width, n, cols, i, lanes[i], wantL[i])
			}
		}

		sx := hardVec(r, cols)
		silu := make([]float32, cols)
		genericTier.SiluF32(silu, sx)
		for i, v := range sx {
			want := v / (1 + expf8Exact(0-v))
			if i >= cols&^7 {
				want = v / (1 + float32(math.Exp(float64(-v))))
			}
			if !sameBits(silu[i], want) {
				t.Fatalf("SiluF32 n %d element %d (%g) = %g, want %g", cols, i, v, silu[i], want)
			}
		}
	}
	if midpoints < 100 || tiny < 100 {
		t.Fatalf("the data reached %d midpoints and %d sums below the normal range; want 100 of each", midpoints, tiny)
	}
}

// TestGenericFMAEdges checks the generic AxpyF32, DotF32Rows and LanesF32
// on fused multiply-adds a·b+c chosen for the edges of their fast paths:
// a float64 sum that rounds onto a float32 midpoint below the normal
// range (so that converting it rounds twice, wrongly), one in the normal
// range, and products of -0 added to the lanes' starting +0.
func TestGenericFMAEdges(t *testing.T) {
	negZero := float32(math.Copysign(0, -1))
	edges := [][3]float32{
		// (1+2⁻²³)(1-2⁻²³)·2⁻¹⁵⁰ + (2²³-1)·2⁻¹⁴⁹: the float64 sum is
		// the midpoint below 2⁻¹²⁶, the exact sum just under it.
		{(1 + 0x1p-23) * 0x1p-75, (1 - 0x1p-23) * 0x1p-75, 0x1.fffffcp-127},
		{-(1 + 0x1p-23) * 0x1p-75, (1 - 0x1p-23) * 0x1p-75, -0x1.fffffcp-127},
		// The same in the normal range: (2⁻²⁴-2⁻⁷⁰) + (1+2⁻²³).
		{(1 + 0x1p-23) * 0x1p-12, (1 - 0x1p-23) * 0x1p-12, 1 + 0x1p-23},
		{negZero, 1, 0},
		{0, -1, 0},
	}
	for _, e := range edges {
		a, b, c := e[0], e[1], e[2]
		want := quant.FMA32(a, b, c)

		y := []float32{c, c, c}
		genericTier.AxpyF32(y, []float32{a, a, a}, b)
		for i := range y {
			if !sameBits(y[i], want) {
				t.Errorf("AxpyF32 %g·%g+%g = %g, want %g", a, b, c, y[i], want)
			}
		}

		// A dot product of 64 whose lane 5 sums c·1 and a·b and whose
		// other lanes are 0.
		w, x := make([]float32, 64), make([]float32, 64)
		w[5], x[5], w[37], x[37] = c, 1, a, b
		if c == 0 {
			w[5], x[5] = a, b // the first block's -0
			for i := range x {
				if i != 5 {
					w[i], x[i] = negZero, 1
				}
			}
		}
		out := make([]float32, 1)
		genericTier.DotF32Rows(out, w, 64, x)
		if wantD := dotF32Def(w, x); !sameBits(out[0], wantD) {
			t.Errorf("DotF32Rows edge %g·%g+%g = %g, want %g", a, b, c, out[0], wantD)
		}

		// LanesF32 of width 8 whose lane 0 sums c·1 and a·b (a -0·1 first
		// for the zero edges).
		p := []float32{1, 0, 0, 0, 0, 0, 0, 0, b}
		xs := make([]float32, 9*3)
		for c0 := range 3 {
			xs[c0], xs[8*3+c0] = c, a
		}
		if c == 0 {
			p[0], xs[0] = b, a
		}
		lanes := make([]float32, 8*3)
		genericTier.LanesF32(lanes, 8, xs, 3, p)
		wantL := make([]float32, 8*3)
		for tt, pa := range p {
			l := tt % 8
			for c0 := range 3 {
				wantL[l*3+c0] = quant.FMA32(xs[tt*3+c0], pa, wantL[l*3+c0])
			}
		}
		for i := range lanes {
			if !sameBits(lanes[i], wantL[i]) {
				t.Errorf("LanesF32 edge %g·%g+%g: element %d = %g, want %g", a, b, c, i, lanes[i], wantL[i])
			}
		}
	}
	// The edges are edges: converting the float64 sum is wrong for the
	// first three.
	for _, e := range edges[:3] {
		s := float32(float64(float64(e[0])*float64(e[1])) + float64(e[2]))
		if s == quant.FMA32(e[0], e[1], e[2]) {
			t.Errorf("edge %v: the float64 sum rounds right", e)
		}
	}
}

// TestReduceLanes32Generic checks the generic ReduceLanes32F32 against
// GGML_F32x8_REDUCE written per column, over widths around its chunks of
// 64 columns.
func TestReduceLanes32Generic(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, cols := range []int{1, 7, 63, 64, 65, 128, 130, 200} {
		for range 20 {
			lanes := hardVec(r, 32*cols)
			out := hardVec(r, cols)
			genericTier.ReduceLanes32F32(out, lanes)
			for c := range out {
				var x [8]float32
				for l := range 8 {
					x[l] = (lanes[l*cols+c] + lanes[(16+l)*cols+c]) + (lanes[(8+l)*cols+c] + lanes[(24+l)*cols+c])
				}
				want := ((x[0] + x[4]) + (x[1] + x[5])) + ((x[2] + x[6]) + (x[3] + x[7]))
				if !sameBits(out[c], want) {
					t.Fatalf("ReduceLanes32F32 cols %d column %d = %g, want %g", cols, c, out[c], want)
				}
			}
		}
	}
}

// BenchmarkGenericAttention measures the generic tier's float work of one
// token's attention in a layer of the 12L-768 model: 12 heads of 64 over
// 48 cached positions, the scores (DotF32Heads), softmax (ExpSubF32) and
// the weighted values (LanesF32Heads, ReduceLanes32F32).
func BenchmarkGenericAttention(b *testing.B) {
	const heads, d, n = 12, 64, 48
	r := rand.New(rand.NewPCG(15, 16))
	vec := func(k int) []float32 {
		v := make([]float32, k)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return v
	}
	keys, values, q := vec(n*heads*d), vec(n*heads*d), vec(heads*d)
	scores, lanes, out := make([]float32, heads*n), make([]float32, heads*32*d), make([]float32, heads*d)
	for range b.N {
		genericTier.DotF32Heads(scores, n, keys, heads*d, n, q, d, 1, 0, nil)
		for h := range heads {
			sc := scores[h*n : (h+1)*n]
			inv := float32(1 / genericTier.ExpSubF32(sc, sc, 3))
			for i := range sc {
				sc[i] *= inv
			}
		}
		genericTier.LanesF32Heads(lanes, values, heads*d, n, scores, n, d, 1, 0)
		for h := range heads {
			genericTier.ReduceLanes32F32(out[h*d:(h+1)*d], lanes[h*32*d:(h+1)*32*d])
		}
	}
}
