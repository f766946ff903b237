package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// sameBits reports whether a and b are the same float32, any NaN equal to
// any other.
func sameBits(a, b float32) bool {
	if a != a || b != b {
		return a != a && b != b
	}
	return math.Float32bits(a) == math.Float32bits(b)
}

// expInputs returns n test inputs for the exponential: ordinary values,
// the edges of its fast path (|n| > 126) and of overflow and underflow
// (|n| > 192, near ±88 and ±104), infinities, NaN and signed zeros, in
// random order so that every lane position sees every kind.
func expInputs(r *rand.Rand, n int) []float32 {
	special := []float32{0, float32(math.Copysign(0, -1)), 1, -1,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		88, -88, 88.72, 88.73, -87.33, -87.34, 103.97, -103.97, 104, -104,
		87.5, -87.5, 126 * math.Ln2, -126 * math.Ln2, 192 * math.Ln2, -192 * math.Ln2,
		133.1, -133.1, 1e-8, -1e-8, 1e30, -1e30, math.MaxFloat32, -math.MaxFloat32,
		math.SmallestNonzeroFloat32, 0.5 * math.Ln2, -0.5 * math.Ln2}
	x := make([]float32, n)
	for i := range x {
		switch r.IntN(5) {
		case 0:
			x[i] = special[r.IntN(len(special))]
		case 1:
			x[i] = float32(r.NormFloat64())
		case 2:
			x[i] = float32(220*r.Float64() - 110) // across both slow paths
		case 3:
			x[i] = float32(r.NormFloat64() * 20)
		default:
			// Within a few ulps of a boundary of the fast path.
			b := []float32{88, 87.3, 103.9, 126 * math.Ln2, 192 * math.Ln2}[r.IntN(5)]
			v := math.Float32frombits(math.Float32bits(b) + uint32(r.IntN(2001)) - 1000)
			if r.IntN(2) == 0 {
				v = -v
			}
			x[i] = v
		}
	}
	return x
}

// TestExpf8 checks the Go model of ggml_v_expf against math.Exp: within
// 2 ulp where the result is a normal float32, exactly 0 or +Inf beyond the
// range, so that the model is the approximation it claims to be.
func TestExpf8(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, x := range expInputs(r, 100000) {
		got, want := expf8(x), math.Exp(float64(x))
		switch {
		case x != x:
			if got == got {
				t.Errorf("expf8(NaN) = %g", got)
			}
		case want > math.MaxFloat32:
			if !math.IsInf(float64(got), 1) {
				t.Errorf("expf8(%g) = %g, want +Inf", x, got)
			}
		case want < 0x1p-126:
			if got > 0x1p-126 || got < 0 {
				t.Errorf("expf8(%g) = %g, want subnormal or 0 (%g)", x, got, want)
			}
		default:
			ulp := float64(math.Nextafter32(float32(want), float32(math.Inf(1))) - float32(want))
			if math.Abs(float64(got)-want) > 2*ulp {
				t.Errorf("expf8(%g) = %g, math.Exp %g", x, got, want)
			}
		}
	}
}

// withTiers runs f under every available tier.
func withTiers(t *testing.T, f func(tier string)) {
	defer SetTier(DefaultTier().Name())
	for _, name := range Tiers() {
		if err := SetTier(name); err != nil {
			t.Fatal(err)
		}
		f(name)
	}
}

// TestSiluF32 checks SiluF32 on every tier against its definition from
// expf8 and expf, bit for bit, in place and not.
func TestSiluF32(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	lengths := []int{0, 1, 7, 8, 9, 15, 16, 17, 31, 40, 1000, 5504}
	withTiers(t, func(tier string) {
		for _, n := range lengths {
			for _, inPlace := range []bool{false, true} {
				x := expInputs(r, n)
				want := make([]float32, n)
				for i, v := range x {
					if i < n&^7 {
						want[i] = v / (1 + expf8(0-v))
					} else {
						want[i] = v / (1 + float32(math.Exp(float64(-v))))
					}
				}
				dst := make([]float32, n)
				if inPlace {
					dst = x
				}
				SiluF32(dst, x)
				for i := range want {
					if !sameBits(dst[i], want[i]) {
						t.Fatalf("%s: SiluF32 n=%d inPlace=%v [%d]: got %g, want %g", tier, n, inPlace, i, dst[i], want[i])
					}
				}
			}
		}
	})
}

// softmaxSum is the sum of softmaxScaled in the model: expf8 of each
// element, groups of 8 zero-padded, each group's hsum added in float64.
func softmaxSum(dst, x []float32, max float32) float64 {
	var sum float64
	for i := 0; i < len(x); i += 8 {
		var lanes [8]float32
		for l := 0; l < 8 && i+l < len(x); l++ {
			dst[i+l] = expf8(x[i+l] - max)
			lanes[l] = dst[i+l]
		}
		a0, a1, a2, a3 := lanes[4]+lanes[0], lanes[5]+lanes[1], lanes[6]+lanes[2], lanes[7]+lanes[3]
		sum += float64((a0 + a2) + (a1 + a3))
	}
	return sum
}

// TestExpSubF32 checks ExpSubF32 on every tier against the model's softmax
// sum, element and sum bit for bit, for attention-like rows (max the row's
// maximum) and for arbitrary inputs and maxima.
func TestExpSubF32(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 46))
	lengths := []int{1, 2, 7, 8, 9, 15, 16, 23, 24, 33, 64, 100, 257, 4096}
	withTiers(t, func(tier string) {
		for _, n := range lengths {
			for kind := 0; kind < 3; kind++ {
				var x []float32
				var max float32
				switch kind {
				case 0: // attention scores
					x = make([]float32, n)
					max = float32(math.Inf(-1))
					for i := range x {
						x[i] = float32(r.NormFloat64() * 8)
						max = float32(math.Max(float64(max), float64(x[i])))
					}
				case 1: // masked positions and large spreads
					x = make([]float32, n)
					for i := range x {
						x[i] = float32(r.NormFloat64() * 60)
						if r.IntN(4) == 0 {
							x[i] = float32(math.Inf(-1))
						}
					}
					max = 30
				default:
					x = expInputs(r, n)
					max = []float32{0, 1, -50, 100, float32(math.Inf(1))}[r.IntN(5)]
				}
				name := fmt.Sprintf("%s: ExpSubF32 n=%d kind=%d", tier, n, kind)
				want := make([]float32, n)
				wantSum := softmaxSum(want, x, max)
				for _, inPlace := range []bool{false, true} {
					xx := append([]float32(nil), x...)
					dst := make([]float32, n+1)
					dst[n] = 42
					if inPlace {
						dst = append(xx, 42)
					}
					sum := ExpSubF32(dst[:n], xx, max)
					if math.Float64bits(sum) != math.Float64bits(wantSum) && !(sum != sum && wantSum != wantSum) {
						t.Errorf("%s inPlace=%v: sum %g, want %g", name, inPlace, sum, wantSum)
					}
					for i := range want {
						if !sameBits(dst[i], want[i]) {
							t.Fatalf("%s inPlace=%v [%d] exp(%g-%g): got %g, want %g", name, inPlace, i, x[i], max, dst[i], want[i])
						}
					}
					if dst[n] != 42 {
						t.Errorf("%s: wrote past the end", name)
					}
				}
			}
		}
	})
	if got := ExpSubF32(nil, nil, 0); got != 0 {
		t.Errorf("ExpSubF32 of nothing = %g", got)
	}
}

func TestExpNoAllocs(t *testing.T) {
	x := make([]float32, 101)
	dst := make([]float32, 101)
	withTiers(t, func(tier string) {
		if n := testing.AllocsPerRun(100, func() {
			SiluF32(dst, x)
			ExpSubF32(dst, x, 1)
		}); n != 0 {
			t.Errorf("%s: %v allocations", tier, n)
		}
	})
}

// BenchmarkSilu and BenchmarkExpSub measure a feed-forward width of SiLU
// and an attention row of exponentials per tier.
func BenchmarkSilu(b *testing.B) {
	r := rand.New(rand.NewPCG(47, 48))
	x := make([]float32, 5632)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 3)
	}
	dst := make([]float32, len(x))
	defer SetTier(DefaultTier().Name())
	for _, name := range Tiers() {
		b.Run(name, func(b *testing.B) {
			SetTier(name)
			b.SetBytes(int64(4 * len(x)))
			for b.Loop() {
				SiluF32(dst, x)
			}
		})
	}
}

func BenchmarkExpSub(b *testing.B) {
	r := rand.New(rand.NewPCG(49, 50))
	x := make([]float32, 1021)
	for i := range x {
		x[i] = float32(r.NormFloat64()*4 - 10)
	}
	dst := make([]float32, len(x))
	defer SetTier(DefaultTier().Name())
	for _, name := range Tiers() {
		b.Run(name, func(b *testing.B) {
			SetTier(name)
			b.SetBytes(int64(4 * len(x)))
			for b.Loop() {
				ExpSubF32(dst, x, 0)
			}
		})
	}
}
