package quant_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

var ownTypes = []quant.Type{quant.QSF_Q2A, quant.QSF_Q3A, quant.QSF_Q4A}

// ownTol is the tolerated RMS relative round-trip error on Gaussian data
// (uniform importance): about 1.5× the measured error of each type.
var ownTol = map[quant.Type]float64{quant.QSF_Q2A: 0.45, quant.QSF_Q3A: 0.22, quant.QSF_Q4A: 0.11}

func TestOwnTypesNamesAndCodes(t *testing.T) {
	for _, ty := range ownTypes {
		if ty < 0x8000 {
			t.Errorf("%v: code %#x below QSF's reserved range", ty, uint32(ty))
		}
		got, err := quant.ParseType(ty.String())
		if err != nil || got != ty {
			t.Errorf("ParseType(%q) = %v, %v", ty.String(), got, err)
		}
	}
}

// TestOwnDotMatchesDequantize checks Dot against the float64 dot of the
// dequantized operands, with the m term taken through Q8_1's fp16 s.
func TestOwnDotMatchesDequantize(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, ty := range ownTypes {
		tr, _ := quant.Lookup(ty)
		for _, blocks := range []int{1, 2, 3, 11} {
			n := blocks * 64
			t.Run(fmt.Sprintf("%v/n=%d", ty, n), func(t *testing.T) {
				x, a := randVec(r, n), randVec(r, n)
				for i := range x {
					x[i] += 0.7 // a non-zero mean exercises m
				}
				w := encode(t, ty, x, false)
				act := encode(t, tr.VecDot, a, false)
				got, err := quant.DotRow(ty, n, w, act)
				if err != nil {
					t.Fatal(err)
				}
				xd, ad := decode(t, ty, w, n), decode(t, quant.Q8_1, act, n)
				var exact, absSum, ideal, nx, na float64
				for i := 0; i < n; i++ {
					p := float64(xd[i]) * float64(ad[i])
					exact += p
					absSum += math.Abs(p)
					ideal += float64(x[i]) * float64(a[i])
					nx += float64(x[i]) * float64(x[i])
					na += float64(a[i]) * float64(a[i])
				}
				for ib := 0; ib < n/32; ib++ {
					blk := w[ib/2*tr.BlockBytes:]
					m := float64(quant.FP16ToFP32(uint16(blk[2]) | uint16(blk[3])<<8))
					s := float64(quant.FP16ToFP32(uint16(act[ib*36+2]) | uint16(act[ib*36+3])<<8))
					var sa float64
					for j := 0; j < 32; j++ {
						sa += float64(ad[ib*32+j])
					}
					exact += m*s - m*sa
				}
				if d := math.Abs(float64(got) - exact); d > 2e-6*absSum {
					t.Errorf("Dot = %v, dequantized dot = %v (diff %.3g, Σ|p| %.3g)", got, exact, d, absSum)
				}
				if d, norm := math.Abs(float64(got)-ideal), math.Sqrt(nx*na); d > ownTol[ty]*norm {
					t.Errorf("Dot = %v, float64 dot = %v: error %.3g·‖x‖‖a‖", got, ideal, d/norm)
				}
			})
		}
	}
}

func TestOwnRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const n = 4096
	for _, ty := range ownTypes {
		x := randVec(r, n)
		got := decode(t, ty, encode(t, ty, x, false), n)
		e := rmsRel(got, x)
		if e > ownTol[ty] {
			t.Errorf("%v: RMS relative round-trip error %.3g > %.3g", ty, e, ownTol[ty])
		}
		t.Logf("%v: RMS relative error %.4f", ty, e)
	}
	// More bits, less error.
	var prev float64 = 1
	for _, ty := range ownTypes {
		x := randVec(rand.New(rand.NewPCG(1, 1)), n)
		e := rmsRel(decode(t, ty, encode(t, ty, x, false), n), x)
		if e >= prev {
			t.Errorf("%v: error %.3g not below the narrower type's %.3g", ty, e, prev)
		}
		prev = e
	}
}

// TestOwnExactGrid quantizes data that lies on a grid d·q+m with
// fp16-exact d and m and every code used: it must come back exactly,
// which checks the bit packing of every code position.
func TestOwnExactGrid(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, ty := range ownTypes {
		nmax := map[quant.Type]int{quant.QSF_Q2A: 3, quant.QSF_Q3A: 7, quant.QSF_Q4A: 15}[ty]
		const n = 256
		x := make([]float32, n)
		for i := range x {
			q := r.IntN(nmax + 1)
			if i%64 == 0 {
				q = 0
			} else if i%64 == 1 {
				q = nmax
			}
			x[i] = 0.125*float32(q) - 0.5
		}
		got := decode(t, ty, encode(t, ty, x, false), n)
		for i := range x {
			if got[i] != x[i] {
				t.Fatalf("%v: element %d = %v, want %v", ty, i, got[i], x[i])
			}
		}
	}
}

// TestOwnImportance checks that importance weights lower the weighted
// error they are given, compared with uniform weights.
func TestOwnImportance(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	const n = 64 * 64
	for _, ty := range ownTypes {
		x := randVec(r, n)
		imp := make([]float32, n)
		for i := range imp {
			imp[i] = float32(math.Exp(3 * r.NormFloat64())) // heavy-tailed like activation energy
		}
		b, _ := quant.RowBytes(ty, n)
		plain, weighted := make([]byte, b), make([]byte, b)
		if err := quant.QuantizeRowImportance(ty, plain, x, nil); err != nil {
			t.Fatal(err)
		}
		if err := quant.QuantizeRowImportance(ty, weighted, x, imp); err != nil {
			t.Fatal(err)
		}
		werr := func(enc []byte) float64 {
			d := decode(t, ty, enc, n)
			var e float64
			for i := range x {
				e += float64(imp[i]) * float64(d[i]-x[i]) * float64(d[i]-x[i])
			}
			return e
		}
		ep, ew := werr(plain), werr(weighted)
		if !(ew < 0.9*ep) {
			t.Errorf("%v: weighted error with importance %.4g, without %.4g: want a clear gain", ty, ew, ep)
		}
		t.Logf("%v: weighted error %.4g → %.4g", ty, ep, ew)
	}
}

func TestOwnShapeErrors(t *testing.T) {
	for _, ty := range ownTypes {
		bb := ty.BlockBytes()
		if err := quant.QuantizeRow(ty, make([]byte, bb), make([]float32, 63)); !errors.Is(err, quant.ErrLength) {
			t.Errorf("%v: 63 elements: err = %v, want ErrLength", ty, err)
		}
		if err := quant.DequantizeRow(ty, make([]float32, 64), make([]byte, bb-1)); !errors.Is(err, quant.ErrLength) {
			t.Errorf("%v: short block: err = %v, want ErrLength", ty, err)
		}
		if err := quant.QuantizeRowImportance(ty, make([]byte, bb), make([]float32, 64), make([]float32, 32)); !errors.Is(err, quant.ErrLength) {
			t.Errorf("%v: short importance: err = %v, want ErrLength", ty, err)
		}
		if _, err := quant.RowBytes(ty, 96); err == nil {
			t.Errorf("RowBytes(%v, 96): no error", ty)
		}
	}
}

// TestOwnDegenerateBlocks: constant, zero and huge-range blocks encode
// without NaN.
func TestOwnDegenerateBlocks(t *testing.T) {
	for _, ty := range ownTypes {
		for _, x := range [][]float32{make([]float32, 64), constant(64, 3.5), spike(64, 6e4)} {
			got := decode(t, ty, encode(t, ty, x, false), 64)
			for i, v := range got {
				if math.IsNaN(float64(v)) || math.Abs(float64(v-x[i])) > math.Abs(float64(x[i]))+1e-3 && x[i] != 6e4 {
					t.Fatalf("%v: element %d = %v from %v", ty, i, v, x[i])
				}
			}
		}
	}
}

func constant(n int, v float32) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = v
	}
	return x
}

func spike(n int, v float32) []float32 {
	x := make([]float32, n)
	x[5] = v
	return x
}
