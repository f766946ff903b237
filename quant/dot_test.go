package quant_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

var allTypes = []quant.Type{
	quant.F32, quant.F16, quant.BF16, quant.Q8_0, quant.Q8_1, quant.Q4_0, quant.Q4_1,
	quant.Q5_0, quant.Q5_1, quant.Q2_K, quant.Q3_K, quant.Q4_K, quant.Q5_K, quant.Q6_K,
	quant.Q8_K, quant.IQ4_NL,
}

// quantTol is the tolerated |Dot − Σx·a| relative to ‖x‖·‖a‖ for random
// Gaussian data, generous multiples of each type's quantization noise.
var quantTol = map[quant.Type]float64{
	quant.F32: 1e-6, quant.F16: 2e-3, quant.BF16: 1e-2, quant.Q8_0: 1e-2, quant.Q8_1: 1e-2,
	quant.Q8_K: 1e-2, quant.Q6_K: 3e-2, quant.Q5_K: 4e-2, quant.Q5_0: 5e-2, quant.Q5_1: 5e-2,
	quant.Q4_K: 8e-2, quant.Q4_0: 1e-1, quant.Q4_1: 1e-1, quant.IQ4_NL: 1e-1,
	quant.Q3_K: 2e-1, quant.Q2_K: 4e-1,
}

func randVec(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

func encode(t testing.TB, ty quant.Type, x []float32, ref bool) []byte {
	t.Helper()
	n, err := quant.RowBytes(ty, len(x))
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, n)
	if ref {
		err = quant.QuantizeRowRef(ty, b, x)
	} else {
		err = quant.QuantizeRow(ty, b, x)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decode(t testing.TB, ty quant.Type, b []byte, n int) []float32 {
	t.Helper()
	x := make([]float32, n)
	if err := quant.DequantizeRow(ty, x, b); err != nil {
		t.Fatal(err)
	}
	return x
}

// TestDotMatchesDequantize checks every type's Dot against the float64 dot
// of the dequantized operands (tight: only float32 scale arithmetic may
// differ) and against the unquantized data (quantization tolerance).
func TestDotMatchesDequantize(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, ty := range allTypes {
		tr, err := quant.Lookup(ty)
		if err != nil {
			t.Fatal(err)
		}
		for _, blocks := range []int{1, 2, 3, 8} {
			n := blocks * max(tr.BlockSize, 32)
			if ty == quant.F32 || ty == quant.F16 || ty == quant.BF16 {
				n += 7 // exercise the scalar tail
			}
			t.Run(fmt.Sprintf("%v/n=%d", ty, n), func(t *testing.T) {
				x, a := randVec(r, n), randVec(r, n)
				w := encode(t, ty, x, true)
				act := encode(t, tr.VecDot, a, false)
				got, err := quant.DotRow(ty, n, w, act)
				if err != nil {
					t.Fatal(err)
				}
				xd, ad := decode(t, ty, w, n), decode(t, tr.VecDot, act, n)
				var exact, absSum, ideal, nx, na float64
				for i := 0; i < n; i++ {
					p := float64(xd[i]) * float64(ad[i])
					exact += p
					absSum += math.Abs(p)
					ideal += float64(x[i]) * float64(a[i])
					nx += float64(x[i]) * float64(x[i])
					na += float64(a[i]) * float64(a[i])
				}
				if ty == quant.Q4_1 || ty == quant.Q5_1 {
					// ggml uses the fp16-rounded s = d·Σq of Q8_1 for the
					// m term, not the exact Σ m·a.
					for ib := 0; ib < n/32; ib++ {
						m := float64(quant.FP16ToFP32(uint16(w[ib*tr.BlockBytes+2]) | uint16(w[ib*tr.BlockBytes+3])<<8))
						s := float64(quant.FP16ToFP32(uint16(act[ib*36+2]) | uint16(act[ib*36+3])<<8))
						var sa float64
						for j := 0; j < 32; j++ {
							sa += float64(ad[ib*32+j])
						}
						exact += m*s - m*sa
					}
				}
				if d := math.Abs(float64(got) - exact); d > 2e-6*absSum {
					t.Errorf("Dot = %v, dequantized dot = %v (diff %.3g, Σ|p| %.3g)", got, exact, d, absSum)
				}
				norm := math.Sqrt(nx * na)
				if d := math.Abs(float64(got) - ideal); d > quantTol[ty]*norm {
					t.Errorf("Dot = %v, float64 dot = %v: error %.3g > %.3g·‖x‖‖a‖", got, ideal, d/norm, quantTol[ty])
				}
			})
		}
	}
}

// TestQuantizeRoundTrip checks each quantizer's reconstruction error on
// random data.
func TestQuantizeRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const n = 1024
	for _, ty := range allTypes {
		x := randVec(r, n)
		got := decode(t, ty, encode(t, ty, x, true), n)
		if e := rmsRel(got, x); e > quantTol[ty] {
			t.Errorf("%v: RMS relative round-trip error %.3g > %.3g", ty, e, quantTol[ty])
		}
	}
}

func TestRowLengthErrors(t *testing.T) {
	tests := []struct {
		ty     quant.Type
		n, len int
	}{
		{quant.Q4_0, 31, 18}, {quant.Q4_0, 32, 17}, {quant.Q4_K, 256, 143}, {quant.F16, 3, 8},
	}
	for _, tc := range tests {
		if err := quant.DequantizeRow(tc.ty, make([]float32, tc.n), make([]byte, tc.len)); err == nil {
			t.Errorf("DequantizeRow(%v, %d elements, %d bytes): no error", tc.ty, tc.n, tc.len)
		}
		if err := quant.QuantizeRow(tc.ty, make([]byte, tc.len), make([]float32, tc.n)); err == nil {
			t.Errorf("QuantizeRow(%v, %d elements, %d bytes): no error", tc.ty, tc.n, tc.len)
		}
	}
	if err := quant.QuantizeRow(quant.I8, nil, nil); err == nil {
		t.Error("QuantizeRow(I8): no error")
	}
}

// FuzzDequantize feeds arbitrary bytes to every dequantizer and dot: they
// must not panic on any bit pattern of a correctly sized buffer.
func FuzzDequantize(f *testing.F) {
	f.Add(uint8(0), make([]byte, 300))
	f.Fuzz(func(t *testing.T, sel uint8, data []byte) {
		types := append(allTypes[:len(allTypes):len(allTypes)], ownTypes...)
		ty := types[int(sel)%len(types)]
		tr, _ := quant.Lookup(ty)
		n := len(data) / tr.BlockBytes * tr.BlockSize
		w := data[:n/tr.BlockSize*tr.BlockBytes]
		_ = quant.DequantizeRow(ty, make([]float32, n), w)
		vt, _ := quant.Lookup(tr.VecDot)
		act := make([]byte, n/vt.BlockSize*vt.BlockBytes)
		copy(act, data)
		if n%vt.BlockSize == 0 {
			if _, err := quant.DotRow(ty, n, w, act); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func BenchmarkDot(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	const n = 4096
	for _, ty := range append(allTypes[:len(allTypes):len(allTypes)], ownTypes...) {
		tr, _ := quant.Lookup(ty)
		w := encode(b, ty, randVec(r, n), true)
		act := encode(b, tr.VecDot, randVec(r, n), false)
		b.Run(ty.String(), func(b *testing.B) {
			b.SetBytes(int64(len(w)))
			for b.Loop() {
				tr.Dot(n, w, act)
			}
		})
	}
}
