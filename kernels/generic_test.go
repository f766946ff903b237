package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// genericCases are the generic tier's own kernels (SWAR integer sums) with
// the file type they multiply, the layout MatVec receives, and package
// quant's dot product of one file row, which they must equal bit for bit.
var genericCases = []struct {
	file, typ quant.Type
	group     int // rows per group of the layout
	dot       func(n int, w, act []byte) float32
}{
	{quant.Q4_0, Q4_0x8, 8, quant.DotQ4_0Gemv},
	{quant.Q8_0, Q8_0x4, 4, traitsDot(quant.Q8_0)},
	{quant.Q6_K, quant.Q6_K, 1, traitsDot(quant.Q6_K)},
	{quant.Q4_K, quant.Q4_K, 1, traitsDot(quant.Q4_K)},
}

func traitsDot(t quant.Type) func(n int, w, act []byte) float32 {
	tt, err := quant.Lookup(t)
	if err != nil {
		panic(err)
	}
	return tt.Dot
}

// specialF16 are fp16 scales at the edges: zeros, subnormals, the largest
// finite values, infinities and NaNs.
var specialF16 = []uint16{0, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0x3c00}

// fillGeneric overwrites w (file rows of type t) and act (activations of
// its vecdot type) with the named kind of data beyond randomRows: "bytes"
// sets every byte at random (quants of -128 included, scales of any bit
// pattern), "extreme" sets every weight quant to its largest or smallest
// code and every activation quant to -128 or 127 with special scales.
func fillGeneric(r *rand.Rand, fill string, t quant.Type, w, act []byte) {
	at := vecDotType[t]
	switch fill {
	case "bytes":
		for i := range w {
			w[i] = byte(r.Uint32())
		}
		for i := range act {
			act[i] = byte(r.Uint32())
		}
		// Keep most scales finite so that sums are not all NaN.
		scalesOf(t, w, func(b []byte) { binary.LittleEndian.PutUint16(b, uint16(r.IntN(0x7800))|uint16(r.IntN(2))<<15) })
		if at == quant.Q8_K {
			for o := 0; o < len(act); o += 292 {
				binary.LittleEndian.PutUint32(act[o:], math.Float32bits(float32(r.NormFloat64())))
			}
		} else {
			scalesOf(at, act, func(b []byte) { binary.LittleEndian.PutUint16(b, uint16(r.IntN(0x7800))|uint16(r.IntN(2))<<15) })
		}
	case "extreme":
		v := []byte{0x00, 0xff}[r.IntN(2)]
		for i := range w {
			w[i] = v
		}
		scalesOf(t, w, func(b []byte) { binary.LittleEndian.PutUint16(b, specialF16[r.IntN(len(specialF16))]) })
		bs := at.BlockBytes()
		for o := 0; o < len(act); o += bs {
			q := []byte{0x80, 0x7f}[r.IntN(2)]
			switch at {
			case quant.Q8_0:
				for j := 2; j < 34; j++ {
					act[o+j] = q
				}
				binary.LittleEndian.PutUint16(act[o:], specialF16[r.IntN(len(specialF16))])
			case quant.Q8_K:
				for j := 4; j < 260; j++ {
					act[o+j] = q
				}
			}
		}
	}
}

// scalesOf calls set on the fp16 scale fields of every block of w, a
// buffer of type t.
func scalesOf(t quant.Type, w []byte, set func([]byte)) {
	bs := t.BlockBytes()
	var offs []int
	switch t {
	case quant.Q4_0, quant.Q8_0:
		offs = []int{0}
	case quant.Q6_K:
		offs = []int{208}
	case quant.Q4_K:
		offs = []int{0, 2}
	}
	for o := 0; o < len(w); o += bs {
		for _, k := range offs {
			set(w[o+k:])
		}
	}
}

// TestGenericSWAR checks the generic tier's SWAR kernels against package
// quant's dot products bit for bit (NaN results only have to be NaN) on
// random, arbitrary-byte and extreme data of odd shapes, through MatVec and
// MatMul (whose activations each get their own preparation).
func TestGenericSWAR(t *testing.T) {
	r := rand.New(rand.NewPCG(77, 78))
	for _, c := range genericCases {
		bs := c.file.BlockSize()
		for _, sh := range []struct{ rows, blocks int }{{8, 1}, {16, 2}, {24, 3}, {8, 5}, {40, 7}, {64, 24}} {
			rows, cols := sh.rows, sh.blocks*bs
			for _, fill := range []string{"random", "bytes", "extreme"} {
				t.Run(fmt.Sprintf("%v/%dx%d/%s", typeName(c.typ), rows, cols, fill), func(t *testing.T) {
					for rep := 0; rep < 4; rep++ {
						const n = 3
						w := randomRows(r, c.file, rows, cols)
						acts := randomRows(r, vecDotType[c.file], n, cols)
						fillGeneric(r, fill, c.file, w, acts)
						rb, _ := quant.RowBytes(c.file, cols)
						ab := len(acts) / n
						want := make([]float32, n*rows)
						for k := 0; k < n; k++ {
							for i := 0; i < rows; i++ {
								want[k*rows+i] = c.dot(cols, w[i*rb:(i+1)*rb], acts[k*ab:(k+1)*ab])
							}
						}
						m := w
						if c.typ != c.file {
							m = make([]byte, len(w))
							if _, err := Repack(c.file, m, w, rows, cols); err != nil {
								t.Fatal(err)
							}
						}
						got := make([]float32, n*rows)
						genericTier.MatMul(c.typ, got, m, cols, acts, n)
						one := make([]float32, rows)
						genericTier.MatVec(c.typ, one, m, cols, acts[:ab])
						for i := range want {
							if g, wt := got[i], want[i]; math.Float32bits(g) != math.Float32bits(wt) && !(g != g && wt != wt) {
								t.Fatalf("MatMul activation %d row %d: got %g (%#x), want %g (%#x)", i/rows, i%rows, g, math.Float32bits(g), wt, math.Float32bits(wt))
							}
						}
						for i := range one {
							if g, wt := one[i], want[i]; math.Float32bits(g) != math.Float32bits(wt) && !(g != g && wt != wt) {
								t.Fatalf("MatVec row %d: got %g, want %g", i, g, wt)
							}
						}
					}
				})
			}
		}
	}
}

// TestFMA32Try checks fma32Try's fast path against quant.FMA32 on
// random operands, on sums that are float32 rounding midpoints (where the
// float64 sum may round the wrong way for float32), among them subnormal
// ones, and on zeros, subnormals, infinities and NaNs; and fma32Rare, the
// kernels' slow path, against quant.FMA32 on all of them.
func TestFMA32Try(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 33))
	specials := []float32{0, float32(math.Copysign(0, -1)), 1e-45, -1e-45, 1e-38, math.MaxFloat32,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1, -1}
	slow, exact := 0, 0
	for i := 0; i < 1_000_000; i++ {
		a := float32(r.NormFloat64() * math.Ldexp(1, r.IntN(40)-20))
		b := float32(r.NormFloat64() * math.Ldexp(1, r.IntN(40)-20))
		var c float32
		switch i % 6 {
		case 0:
			c = float32(r.NormFloat64() * math.Ldexp(1, r.IntN(60)-30))
		case 1:
			// c + a·b = c + 2⁻²⁴·(1 − 2⁻²ᵏ) times a power of two, with c in
			// [1, 2): the float64 sum rounds onto the float32 midpoint
			// c + 2⁻²⁴ although the exact sum lies below (or above) it.
			k := 15 + r.IntN(9)
			sc := math.Ldexp(1, r.IntN(40)-20)
			a = float32(1 + math.Ldexp(1, -k))
			b = float32((1 - math.Ldexp(1, -k)) * math.Ldexp(1, -24) * sc)
			c = float32((1 + float64(r.IntN(1<<23))*math.Ldexp(1, -23)) * sc)
			if r.IntN(2) == 0 {
				b, c = -b, -c
			}
			if r.IntN(2) == 0 {
				a = float32(1 - math.Ldexp(1, -k)) // below 1: the sum lies above the midpoint's twin
				b = float32(-(1 + math.Ldexp(1, -k)) * math.Ldexp(1, -24) * sc)
			}
		case 2:
			a, b = float32(r.IntN(1<<15)-1<<14), specials[r.IntN(len(specials))]
			c = specials[r.IntN(len(specials))]
		case 3:
			c = float32(math.Ldexp(r.Float64(), -126-r.IntN(24)))
		case 4:
			// a·b = 1 + 2⁻ʲ + 2⁻²⁴⁺ʲ + 2⁻²⁴ is a float32 midpoint and c a
			// tiny nudge lost in the float64 sum.
			j := 1 + r.IntN(23)
			sc := math.Ldexp(1, r.IntN(40)-20)
			a = float32(1 + math.Ldexp(1, -j))
			b = float32((1 + math.Ldexp(1, j-24)) * sc)
			c = float32(math.Ldexp(sc, -40-r.IntN(40)))
			if r.IntN(2) == 0 {
				c = -c
			}
		case 5:
			// a·b = 2⁻¹⁵⁰·(1 − 2⁻⁴⁶), just below the midpoint between the
			// float32 subnormals c = k·2⁻¹⁴⁹ (k odd) and c + 2⁻¹⁴⁹: the
			// float64 sum rounds onto the midpoint, which ties to even
			// upwards, where only the range test sends the sum to the
			// slow path (the midpoint test looks at the normal numbers'
			// rounding bit).
			a = float32(math.Ldexp(1-math.Ldexp(1, -23), -75))
			b = float32(math.Ldexp(1+math.Ldexp(1, -23), -75))
			c = float32(math.Ldexp(float64(1<<7+2*r.IntN(1<<22-1<<6)+1), -149))
			if r.IntN(2) == 0 {
				a, c = -a, -c
			}
		}
		w := quant.FMA32(a, b, c)
		if v := fma32Rare(a, b, c); math.Float32bits(v) != math.Float32bits(w) && !(v != v && w != w) {
			t.Fatalf("fma32Rare(%g, %g, %g) = %g (%#x), quant.FMA32 %g (%#x)", a, b, c, v, math.Float32bits(v), w, math.Float32bits(w))
		}
		v, ok := fma32Try(a, b, c)
		if !ok {
			slow++
			if p := float64(a) * float64(b); float64(p+float64(c))-p == float64(c) {
				exact++
			}
			continue
		}
		if math.Float32bits(v) != math.Float32bits(w) && !(v != v && w != w) {
			t.Fatalf("fma(%g, %g, %g) = %g (%#x), quant.FMA32 %g (%#x)", a, b, c, v, math.Float32bits(v), w, math.Float32bits(w))
		}
	}
	if slow < 1000 || exact < 100 || slow-exact < 1000 {
		t.Errorf("only %d of the cases took the slow path, %d of them with an exact float64 sum", slow, exact)
	}
	t.Logf("%d slow paths, %d with an exact float64 sum", slow, exact)
}

// TestBareTierFallsBack checks that a tier without kernels of its own (as
// a new architecture's tier starts out) runs the generic tier's kernels
// with their own activation preparation, and so gives its bits.
func TestBareTierFallsBack(t *testing.T) {
	bare := &Tier{name: "bare"}
	r := rand.New(rand.NewPCG(9, 10))
	for _, c := range genericCases {
		rows, cols := 16, 3*c.file.BlockSize()
		w := randomRows(r, c.file, rows, cols)
		act := randomRows(r, vecDotType[c.file], 1, cols)
		if c.typ != c.file {
			if _, err := Repack(c.file, w, w, rows, cols); err != nil {
				t.Fatal(err)
			}
		}
		got, want := make([]float32, rows), make([]float32, rows)
		bare.MatVec(c.typ, got, w, cols, act)
		genericTier.MatVec(c.typ, want, w, cols, act)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%v row %d: bare tier %g, generic %g", typeName(c.typ), i, got[i], want[i])
			}
		}
	}
}

// TestQ4_0x8GenericRounding checks the generic Q4_0x8 kernel's shortcut
// for float64 sums below 2⁵ (taken as exact) against a sum just above it
// that the float64 addition rounds onto a float32 midpoint: row 0's first
// block leaves acc = 9455625·2⁻¹⁸ (about 36.07, an odd float32), its
// second adds 2⁻¹⁴ + 2⁻¹⁹ − 2⁻⁴⁸ (s = 9671 with fp16 scales 1115·2⁻²⁴ and
// 1643·2⁻²⁴), whose float64 sum ties onto the midpoint above acc + 2⁻¹⁴,
// which float32 ties up to even, where the fma rounds down. It fails if
// the kernel takes larger sums than 2⁵ as exact.
func TestQ4_0x8GenericRounding(t *testing.T) {
	const rows, cols = 8, 64
	rb, _ := quant.RowBytes(quant.Q4_0, cols)
	w := make([]byte, rows*rb)
	r := rand.New(rand.NewPCG(9, 10))
	for i := range w {
		w[i] = byte(r.Uint32())
	}
	for i := 0; i < rows; i++ {
		for b := 0; b < 2; b++ {
			binary.LittleEndian.PutUint16(w[i*rb+18*b:], 0x3c00) // 1
		}
	}
	// Row 0: block 0 has q−8 = 1 at element 0 and 0 elsewhere; block 1
	// has q−8 = 7 at elements 0..9, 6 at 10 and 1 at 31, 0 elsewhere.
	row := w[:rb]
	binary.LittleEndian.PutUint16(row[0:], 0x4001)  // 1025·2⁻⁹
	binary.LittleEndian.PutUint16(row[18:], 0x045b) // 1115·2⁻²⁴
	// q sets element e of block b to q = v+8.
	q := func(b, e, v int) {
		p := &row[18*b+2+e%16]
		if e < 16 {
			*p = *p&0xf0 | byte(v+8)
		} else {
			*p = *p&0x0f | byte(v+8)<<4
		}
	}
	for e := 0; e < 32; e++ {
		q(0, e, 0)
		q(1, e, 0)
	}
	q(0, 0, 1)
	for e := 0; e < 10; e++ {
		q(1, e, 7)
	}
	q(1, 10, 6)
	q(1, 31, 1)
	// Every row of the group is row 0, so that each row's fma meets
	// the case.
	for i := 1; i < rows; i++ {
		copy(w[i*rb:(i+1)*rb], row)
	}
	act := make([]byte, 2*34)
	binary.LittleEndian.PutUint16(act[0:], 0x4001)  // 1025·2⁻⁹
	binary.LittleEndian.PutUint16(act[34:], 0x066b) // 1643·2⁻²⁴
	for e := 0; e < 32; e++ {
		act[2+e] = byte(int8(r.IntN(256) - 128))
		act[36+e] = 127
	}
	act[2] = 9
	act[36+31] = 19
	// The case is the one described: s·d + acc rounds wrongly through
	// float64.
	acc := float32(9 * 1025 * 1025 * math.Ldexp(1, -18))
	d := float32(1115*1643) * float32(math.Ldexp(1, -48))
	if x := float64(9671)*float64(d) + float64(acc); float32(x) == quant.FMA32(9671, d, acc) {
		t.Fatalf("the float64 sum %v rounds correctly to float32: no test", x)
	}
	m := make([]byte, len(w))
	if _, err := Repack(quant.Q4_0, m, w, rows, cols); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, rows)
	genericTier.MatVec(Q4_0x8, got, m, cols, act)
	for i := range got {
		if want := quant.DotQ4_0Gemv(cols, w[i*rb:(i+1)*rb], act); math.Float32bits(got[i]) != math.Float32bits(want) {
			t.Errorf("row %d: got %g (%#x), want %g (%#x)", i, got[i], math.Float32bits(got[i]), want, math.Float32bits(want))
		}
	}
}
