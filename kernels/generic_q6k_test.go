package kernels

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// q6_KQuant returns the quant (0..63) of element e of the Q6_K block b,
// element by element from ggml's description of the format.
func q6_KQuant(b []byte, e int) byte {
	h, c, l := e/128, e%128/32, e%32
	v := b[64*h+32*(c&1)+l] >> (4 * (c >> 1)) & 0xF
	return v | (b[128+32*h+l]>>(2*c)&3)<<4
}

// unpackQ6_KS returns the quants (0..63) of a Q6_KS block, read back from
// the layout's description (Q6_KS), independently of packQ6_KSBlock.
func unpackQ6_KS(o []byte) [256]byte {
	var q [256]byte
	for g := 0; g < 8; g++ {
		var w [3]uint64
		for k := range w {
			w[k] = binary.LittleEndian.Uint64(o[26*g+8*k:])
		}
		for i := 0; i < 4; i++ {
			lane := func(k int) uint64 { return w[k] >> (16 * i) & 0xFFFF }
			e := func(quad int) *byte { return &q[32*g+4*quad+i] }
			*e(0), *e(1) = byte(lane(0)&63), byte(lane(0)>>6&63)
			*e(2), *e(3) = byte(lane(1)&63), byte(lane(1)>>6&63)
			*e(4), *e(5) = byte(lane(2)&63), byte(lane(2)>>6&63)
			*e(6) = byte(lane(0)>>12 | lane(2)>>12&3<<4)
			*e(7) = byte(lane(1)>>12 | lane(2)>>14<<4)
		}
	}
	return q
}

// extremeQ6_K gives the Q6_K rows w and the Q8_K activations acts
// extreme values block by block: all quants 0, all 63 or random, scales
// −128, 127 or random, activation quants all −128, all 127 or random.
func extremeQ6_K(r *rand.Rand, w, acts []byte) {
	for o := 0; o < len(w); o += 210 {
		switch r.IntN(3) {
		case 0:
			clear(w[o : o+192])
		case 1:
			for j := 0; j < 192; j++ {
				w[o+j] = 0xFF
			}
		}
		for j := 192; j < 208; j++ {
			switch r.IntN(3) {
			case 0:
				w[o+j] = 0x80
			case 1:
				w[o+j] = 0x7F
			}
		}
	}
	for o := 0; o < len(acts); o += 292 {
		v := []byte{0x80, 0x7F, 0}[r.IntN(3)]
		if v != 0 {
			for j := 4; j < 260; j++ {
				acts[o+j] = v
			}
		}
	}
}

// TestQ6_KS checks the generic Q6_KS kernel bit for bit (NaN results only
// have to be NaN) against package quant's Q6_K dot product and the
// generic tier's Q6_K kernel on the file's layout, on random,
// arbitrary-byte and extreme data of odd shapes, through MatVec and
// MatMul on every tier, and that repacking in place equals repacking
// into a copy.
func TestQ6_KS(t *testing.T) {
	r := rand.New(rand.NewPCG(606, 607))
	dot := traitsDot(quant.Q6_K)
	for _, sh := range []struct{ rows, blocks int }{{1, 1}, {3, 2}, {8, 3}, {17, 1}, {5, 5}, {40, 3}} {
		rows, cols := sh.rows, 256*sh.blocks
		for _, fill := range []string{"random", "bytes", "extreme", "extreme6"} {
			t.Run(fmt.Sprintf("%dx%d/%s", rows, cols, fill), func(t *testing.T) {
				for rep := 0; rep < 4; rep++ {
					const n = 3
					w := randomRows(r, quant.Q6_K, rows, cols)
					acts := randomRows(r, quant.Q8_K, n, cols)
					if fill == "extreme6" {
						extremeQ6_K(r, w, acts)
					} else {
						fillGeneric(r, fill, quant.Q6_K, w, acts)
					}
					rb, ab := 210*sh.blocks, len(acts)/n
					want := make([]float32, n*rows)
					for k := 0; k < n; k++ {
						for i := 0; i < rows; i++ {
							want[k*rows+i] = dot(cols, w[i*rb:(i+1)*rb], acts[k*ab:(k+1)*ab])
						}
					}
					file := make([]float32, rows)
					genericTier.MatVec(quant.Q6_K, file, w, cols, acts[:ab])
					m := make([]byte, len(w))
					if typ, err := Repack(quant.Q6_K, m, w, rows, cols); err != nil || typ != Q6_KS {
						t.Fatalf("Repack: %v, %v", typ, err)
					}
					in := bytes.Clone(w)
					if _, err := Repack(quant.Q6_K, in, in, rows, cols); err != nil || !bytes.Equal(in, m) {
						t.Fatalf("repacking in place differs from repacking into a copy (%v)", err)
					}
					same := func(what string, got, want []float32) {
						t.Helper()
						for i := range got {
							if g, wt := got[i], want[i]; math.Float32bits(g) != math.Float32bits(wt) && !(g != g && wt != wt) {
								t.Fatalf("%s %d: got %g (%#x), want %g (%#x)", what, i, g, math.Float32bits(g), wt, math.Float32bits(wt))
							}
						}
					}
					same("file-layout generic kernel vs reference, row", file, want[:rows])
					for _, name := range Tiers() {
						tr, err := TierNamed(name)
						if err != nil {
							t.Fatal(err)
						}
						got := make([]float32, n*rows+1)
						got[n*rows] = 42
						tr.MatMul(Q6_KS, got[:n*rows], m, cols, acts, n)
						same(name+" MatMul activation·rows+row", got[:n*rows], want)
						one := make([]float32, rows+1)
						one[rows] = 42
						tr.MatVec(Q6_KS, one[:rows], m, cols, acts[:ab])
						same(name+" MatVec row", one[:rows], file)
						if got[n*rows] != 42 || one[rows] != 42 {
							t.Fatal("wrote past out")
						}
					}
				}
			})
		}
	}
}

// TestQ6_KSRoundTrip checks that the Q6_KS layout holds every quant, the
// scales and the fp16 scale of the Q6_K blocks it was packed from.
func TestQ6_KSRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(608, 609))
	const rows, nb = 3, 4
	w := randomRows(r, quant.Q6_K, rows, 256*nb)
	for i := range w {
		w[i] = byte(r.Uint32())
	}
	m := make([]byte, len(w))
	if _, err := Repack(quant.Q6_K, m, w, rows, 256*nb); err != nil {
		t.Fatal(err)
	}
	for b := 0; b < rows*nb; b++ {
		src, got := w[210*b:210*b+210], m[210*b:210*b+210]
		q := unpackQ6_KS(got)
		for e := 0; e < 256; e++ {
			if want := q6_KQuant(src, e); q[e] != want {
				t.Fatalf("block %d element %d: quant %d, want %d", b, e, q[e], want)
			}
		}
		// q6_KQuant itself against the Q6_K format: element e's dequantized
		// value is d·scale·(q−32).
		tt, _ := quant.Lookup(quant.Q6_K)
		deq := make([]float32, 256)
		tt.Dequantize(deq, src)
		d := quant.FP16ToFP32(binary.LittleEndian.Uint16(src[208:]))
		for e := 0; e < 256; e++ {
			want := float32(d*float32(int8(src[192+e/16]))) * float32(int(q6_KQuant(src, e))-32)
			if g := deq[e]; math.Float32bits(g) != math.Float32bits(want) && !(g != g && want != want) {
				t.Fatalf("block %d element %d: q6_KQuant gives %g, Dequantize %g", b, e, want, g)
			}
		}
		for j := 0; j < 16; j++ {
			if got[26*(j/2)+24+j%2] != src[192+j] {
				t.Fatalf("block %d: scale %d differs", b, j)
			}
		}
		if !bytes.Equal(got[208:], src[208:]) {
			t.Fatalf("block %d: fp16 scale differs", b)
		}
	}
}

// TestQ6_KSRepackType checks that Q6_K matrices take the Q6_KS layout on
// exactly the tiers whose Q6_K kernel is the generic tier's.
func TestQ6_KSRepackType(t *testing.T) {
	if got, ok := genericTier.RepackType(quant.Q6_K, 7, 512); got != Q6_KS || !ok {
		t.Errorf("generic.RepackType(Q6_K, 7, 512) = %v, %v", got, ok)
	}
	if _, ok := genericTier.RepackType(quant.Q6_K, 7, 300); ok {
		t.Error("generic tier repacks Q6_K of 300 columns")
	}
	for _, tr := range available {
		rows, _ := tr.KernelTiers(quant.Q6_K, 64)
		want := rows == genericTier.name
		if _, ok := tr.RepackType(quant.Q6_K, 64, 256); ok != want {
			t.Errorf("%s.RepackType(Q6_K): %v, want %v (its Q6_K kernel is %s's)", tr.Name(), ok, want, rows)
		}
	}
}

// BenchmarkGenericQ6_KS measures the generic tier's Q6_K kernels on the
// file's layout and on Q6_KS (the LM head's width), one thread; see
// BenchmarkGenericDecode.
func BenchmarkGenericQ6_KS(b *testing.B) {
	tr, err := TierNamed("generic")
	if err != nil {
		b.Fatal(err)
	}
	const cols = 768
	for _, rows := range []int{2048, 32000} {
		r := rand.New(rand.NewPCG(5, 6))
		w := randomRows(r, quant.Q6_K, rows, cols)
		act := randomRows(r, quant.Q8_K, 1, cols)
		m := make([]byte, len(w))
		if _, err := Repack(quant.Q6_K, m, w, rows, cols); err != nil {
			b.Fatal(err)
		}
		out := make([]float32, rows)
		for _, c := range []struct {
			typ quant.Type
			w   []byte
		}{{quant.Q6_K, w}, {Q6_KS, m}} {
			b.Run(fmt.Sprintf("%s/%dx%d", typeName(c.typ), rows, cols), func(b *testing.B) {
				p := NewPoolTier(tr, 1)
				defer p.Close()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				cpu0 := threadCPU()
				for b.Loop() {
					p.MatVec(c.typ, out, c.w, cols, act)
				}
				if cpu1 := threadCPU(); cpu0 >= 0 && cpu1 > cpu0 {
					b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
				}
			})
		}
	}
}
