package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestRotate64Inverse checks that unrotate64 undoes Rotate64 and that the
// rotation keeps dot products (it is orthogonal).
func TestRotate64Inverse(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, 192)
	y := make([]float32, 192)
	for i := range x {
		x[i], y[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
	}
	var dot0 float64
	for i := range x {
		dot0 += float64(x[i]) * float64(y[i])
	}
	rx, ry := append([]float32(nil), x...), append([]float32(nil), y...)
	Rotate64(rx)
	Rotate64(ry)
	var dot1 float64
	for i := range rx {
		dot1 += float64(rx[i]) * float64(ry[i])
	}
	if math.Abs(dot0-dot1) > 1e-4*math.Abs(dot0)+1e-4 {
		t.Errorf("dot %g before rotation, %g after", dot0, dot1)
	}
	unrotate64(rx)
	for i := range x {
		if math.Abs(float64(rx[i]-x[i])) > 1e-5 {
			t.Fatalf("element %d: %g after rotating back, want %g", i, rx[i], x[i])
		}
	}
}

// TestRotatedTypes quantizes Gaussian rows with heavy outliers to each
// rotated type and checks the relative error of the weights against a
// bound per type, and that the reference dot with a rotated Q8_0
// activation matches the float dot of the dequantized row.
func TestRotatedTypes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	bounds := map[Type]float64{QSF_Q2R: 0.14, QSF_Q3R: 0.045, QSF_Q4R: 0.013}
	for typ, bound := range bounds {
		const n = 256
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		x[5], x[77] = 9, -12 // outliers, spread by the rotation
		rb, _ := RowBytes(typ, n)
		q := make([]byte, rb)
		if err := QuantizeRow(typ, q, x); err != nil {
			t.Fatal(err)
		}
		back := make([]float32, n)
		if err := DequantizeRow(typ, back, q); err != nil {
			t.Fatal(err)
		}
		var e, s float64
		for i := range x {
			e += float64((x[i] - back[i]) * (x[i] - back[i]))
			s += float64(x[i] * x[i])
		}
		if e/s > bound {
			t.Errorf("%v: relative error %.4f, want at most %.4f", typ, e/s, bound)
		}
		a := make([]float32, n)
		var want float64
		for i := range a {
			a[i] = float32(r.NormFloat64())
			want += float64(a[i]) * float64(back[i])
		}
		ra := append([]float32(nil), a...)
		Rotate64(ra)
		act := make([]byte, n/32*34)
		if err := QuantizeRow(Q8_0, act, ra); err != nil {
			t.Fatal(err)
		}
		tr, _ := Lookup(typ)
		got := float64(tr.Dot(n, q, act))
		if math.Abs(got-want) > 0.02*math.Sqrt(float64(n))*2 {
			t.Errorf("%v: dot %g, float dot of the dequantized row %g", typ, got, want)
		}
	}
}

// TestQuantizeGPTQ checks that GPTQ lowers the error of the products with
// correlated inputs below that of rounding each block alone.
func TestQuantizeGPTQ(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const rows, cols, toks = 16, 128, 600
	// Inputs with correlated columns: x = A·z.
	A := make([]float64, cols*cols)
	for i := range A {
		A[i] = r.NormFloat64() / 8
	}
	for i := 0; i < cols; i++ {
		A[i*cols+i] += 1
	}
	X := make([][]float32, toks)
	gram := make([]float64, cols*cols)
	for k := range X {
		z := make([]float64, cols)
		for i := range z {
			z[i] = r.NormFloat64()
		}
		X[k] = make([]float32, cols)
		for i := 0; i < cols; i++ {
			var s float64
			for j := 0; j < cols; j++ {
				s += A[i*cols+j] * z[j]
			}
			X[k][i] = float32(s)
		}
		for i := 0; i < cols; i++ {
			for j := 0; j < cols; j++ {
				gram[i*cols+j] += float64(X[k][i]) * float64(X[k][j]) / toks
			}
		}
	}
	w := make([]float32, rows*cols)
	for i := range w {
		w[i] = float32(r.NormFloat64())
	}
	for _, typ := range []Type{QSF_Q2R, QSF_Q3R, QSF_Q4R} {
		rb, _ := RowBytes(typ, cols)
		plain, gptq := make([]byte, rows*rb), make([]byte, rows*rb)
		for i := 0; i < rows; i++ {
			if err := QuantizeRow(typ, plain[i*rb:(i+1)*rb], w[i*cols:(i+1)*cols]); err != nil {
				t.Fatal(err)
			}
		}
		if err := QuantizeGPTQ(typ, gptq, w, rows, cols, gram); err != nil {
			t.Fatal(err)
		}
		outErr := func(q []byte) float64 {
			back := make([]float32, rows*cols)
			if err := DequantizeRow(typ, back, q); err != nil {
				t.Fatal(err)
			}
			var e float64
			for _, x := range X {
				for i := 0; i < rows; i++ {
					var d float64
					for j := 0; j < cols; j++ {
						d += float64(w[i*cols+j]-back[i*cols+j]) * float64(x[j])
					}
					e += d * d
				}
			}
			return e
		}
		ep, eg := outErr(plain), outErr(gptq)
		t.Logf("%v: output error %.4g rounded per block, %.4g with GPTQ", typ, ep, eg)
		if !(eg < 0.9*ep) {
			t.Errorf("%v: GPTQ output error %.4g, not below 0.9 × %.4g", typ, eg, ep)
		}
	}
	if err := QuantizeGPTQ(QSF_Q4A, make([]byte, 36*2*rows), w, rows, cols, gram); err == nil {
		t.Error("QuantizeGPTQ accepted QSF_Q4A")
	}
}
