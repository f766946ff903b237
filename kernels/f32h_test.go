package kernels

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// f32hRows returns rows×cols F32 weights for the F32H tests: Gaussian
// rows (σ 0.02, as models have), and every third row one of sixteen high
// bytes at least twice each plus esc[r] weights (0..5, when cols allows)
// of other high bytes, planted at random columns: zeros and subnormals of
// either sign, large values, and with specials also infinities and NaNs.
func f32hRows(r *rand.Rand, rows, cols int, specials bool) []byte {
	b := make([]byte, 4*rows*cols)
	rare := []byte{0x00, 0x80, 0x50, 0xd0, 0x01}
	if specials {
		rare = []byte{0x7f, 0xff, 0x00, 0x80, 0x50}
	}
	for row := 0; row < rows; row++ {
		o := b[4*row*cols : 4*(row+1)*cols]
		if row%3 != 1 {
			for i := 0; i < cols; i++ {
				binary.LittleEndian.PutUint32(o[4*i:], math.Float32bits(float32(r.NormFloat64()*0.02)))
			}
			continue
		}
		for i := 0; i < cols; i++ {
			v := r.Uint32() & 0xffffff
			binary.LittleEndian.PutUint32(o[4*i:], v|uint32(0x30+i%16)<<24)
		}
		n := row / 3 % 6
		for _, i := range r.Perm(cols)[:n] {
			o[4*i+3] = rare[n-1-(i%n)%n]
			if o[4*i+3] == 0x00 || o[4*i+3] == 0x80 {
				binary.LittleEndian.PutUint32(o[4*i:], uint32(o[4*i+3])<<24|r.Uint32()&0x7fffff*uint32(r.IntN(2)))
			}
		}
	}
	return b
}

// TestF32HRoundTrip checks that PackF32H and DecodeF32H give back the F32
// bits, escapes, zeros, subnormals, infinities and NaNs included, that the
// avx512 decoder (where there is one) decodes as the portable one, and
// that a row of too many high bytes is refused and F32HFits says so.
func TestF32HRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, cols := range []int{128, 256, 384, 768, 2048} {
		rows := 19
		src := f32hRows(r, rows, cols, true)
		if !F32HFits(src, rows, cols) {
			t.Fatalf("%d columns: F32HFits = false", cols)
		}
		rb, _ := F32HRowBytes(cols)
		packed := make([]byte, rows*rb)
		if err := PackF32H(packed, src, rows, cols); err != nil {
			t.Fatal(err)
		}
		escRows := 0
		for row := 0; row < rows; row++ {
			if packed[row*rb+16] != 0 {
				escRows++
			}
		}
		if escRows < 4 {
			t.Errorf("%d columns: %d rows with escapes; the test means more", cols, escRows)
		}
		got := make([]byte, len(src))
		if err := DecodeF32H(got, packed, rows, cols); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, src) {
			t.Fatalf("%d columns: DecodeF32H does not give back the weights", cols)
		}
		if d := testExpandF32H(); d != nil {
			clear(got)
			d(got, packed, rb, cols, rows)
			if !bytes.Equal(got, src) {
				t.Fatalf("%d columns: the avx512 decoder does not give back the weights", cols)
			}
		}
	}
	// 22 high bytes in one row: 6 escapes.
	src := make([]byte, 4*128)
	for i := 0; i < 128; i++ {
		binary.LittleEndian.PutUint32(src[4*i:], uint32(0x20+i%22)<<24|uint32(i))
	}
	if F32HFits(src, 1, 128) {
		t.Error("F32HFits takes a row of 22 high bytes")
	}
	if err := PackF32H(make([]byte, 32+448), src, 1, 128); !errors.Is(err, ErrRepack) {
		t.Errorf("PackF32H of a row of 22 high bytes: %v", err)
	}
	if err := PackF32H(nil, make([]byte, 4*96), 1, 96); !errors.Is(err, ErrRepack) {
		t.Errorf("PackF32H of 96 columns: %v", err)
	}
}

// TestF32HKernels checks MatVec, MatMul and Pool.MatMul of F32H matrices
// against MatVec of the F32 matrices they were packed from, bit for bit,
// on every tier: rows with and without escapes, odd and even numbers of
// chunks, several row tiles, token counts around the tiles of eight and
// four, one to three threads.
func TestF32HKernels(t *testing.T) {
	defer SetTier(DefaultTier().Name())
	type shape struct{ rows, cols, n int }
	shapes := []shape{
		{1, 128, 1}, {7, 128, 3}, {19, 256, 4}, {20, 384, 9}, {37, 768, 8},
		{41, 768, 13}, {9, 2048, 17}, {160, 768, 11}, {3, 4096, 8}, {5, 640, 12},
	}
	r := rand.New(rand.NewPCG(5, 6))
	for _, sh := range shapes {
		src := f32hRows(r, sh.rows, sh.cols, false)
		rb, _ := F32HRowBytes(sh.cols)
		w := make([]byte, sh.rows*rb)
		if err := PackF32H(w, src, sh.rows, sh.cols); err != nil {
			t.Fatal(err)
		}
		acts := randomRows(r, quant.F32, sh.n, sh.cols)
		actBytes := 4 * sh.cols
		for _, name := range Tiers() {
			if err := SetTier(name); err != nil {
				t.Fatal(err)
			}
			want := make([]float32, sh.n*sh.rows)
			got := make([]float32, sh.n*sh.rows)
			for i := 0; i < sh.n; i++ {
				MatVec(quant.F32, want[i*sh.rows:(i+1)*sh.rows], src, sh.cols, acts[i*actBytes:(i+1)*actBytes])
				MatVec(F32H, got[i*sh.rows:(i+1)*sh.rows], w, sh.cols, acts[i*actBytes:(i+1)*actBytes])
			}
			where := fmt.Sprintf("%s/%dx%d", name, sh.rows, sh.cols)
			compareBits(t, where+" MatVec", got, want)
			for _, threads := range []int{0, 1, 2, 3} {
				clear(got)
				if threads == 0 {
					MatMul(F32H, got, w, sh.cols, acts, sh.n)
				} else {
					p := NewPool(threads)
					p.MatMul(F32H, got, w, sh.cols, acts, sh.n)
					p.Close()
				}
				compareBits(t, fmt.Sprintf("%s/n%d/t%d MatMul", where, sh.n, threads), got, want)
			}
		}
	}
}

// compareBits fails t at the first element of got whose bits differ from
// want's.
func compareBits(t *testing.T, where string, got, want []float32) {
	t.Helper()
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: out[%d] = %g, F32 gives %g", where, i, got[i], want[i])
		}
	}
}

// TestPacksF32H checks which tiers take F32H: those with a kernel of their
// own (the avx512 one), for multiples of 128 columns.
func TestPacksF32H(t *testing.T) {
	for _, name := range Tiers() {
		tr, err := TierNamed(name)
		if err != nil {
			t.Fatal(err)
		}
		want := name == "avx512" && testExpandF32H() != nil
		if got := tr.PacksF32H(768); got != want {
			t.Errorf("%s.PacksF32H(768) = %v, want %v", name, got, want)
		}
		if tr.PacksF32H(800) || tr.PacksF32H(0) {
			t.Errorf("%s.PacksF32H takes 800 or 0 columns", name)
		}
		if rows, _ := tr.KernelTiers(F32H, 8); want && rows != "avx512" || !want && rows != "generic" {
			t.Errorf("%s: F32H rows run %s's kernel", name, rows)
		}
	}
}

// testExpandF32H returns the avx512 tier's F32H decoder, nil where the
// tier or its F32H kernels are missing.
func testExpandF32H() func(dst, w []byte, rowBytes, cols, rows int) {
	tr, err := TierNamed("avx512")
	if err != nil {
		return nil
	}
	if k := tr.row(F32H).tile; k != nil {
		return k.expand
	}
	return nil
}

// BenchmarkF32HMatVec compares one-thread MatVec of F32 and F32H matrices
// of 32000×768 (the LM head of 12L-768), far larger than the caches:
// F32H reads 0.885 of the bytes.
func BenchmarkF32HMatVec(b *testing.B) {
	rows, cols := 32000, 768
	if testing.Short() {
		rows = 256
	}
	r := rand.New(rand.NewPCG(7, 8))
	src := make([]byte, 4*rows*cols) // Gaussian, as models' weights: no escapes
	for i := 0; i < rows*cols; i++ {
		binary.LittleEndian.PutUint32(src[4*i:], math.Float32bits(float32(r.NormFloat64()*0.02)))
	}
	rb, _ := F32HRowBytes(cols)
	w := make([]byte, rows*rb)
	if err := PackF32H(w, src, rows, cols); err != nil {
		b.Fatal(err)
	}
	act := randomRows(r, quant.F32, 1, cols)
	out := make([]float32, rows)
	for _, c := range []struct {
		name string
		t    quant.Type
		w    []byte
	}{{"F32", quant.F32, src}, {"F32H", F32H, w}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.w)))
			for b.Loop() {
				MatVec(c.t, out, c.w, cols, act)
			}
		})
	}
}

// BenchmarkF32HMatMul compares one-thread MatMul (prefill) of F32 and F32H
// matrices of 2048×768 against 128 activations: F32H decodes each tile of
// rows once for all of them.
func BenchmarkF32HMatMul(b *testing.B) {
	const rows, cols, n = 2048, 768, 128
	r := rand.New(rand.NewPCG(9, 10))
	src := make([]byte, 4*rows*cols)
	for i := 0; i < rows*cols; i++ {
		binary.LittleEndian.PutUint32(src[4*i:], math.Float32bits(float32(r.NormFloat64()*0.02)))
	}
	rb, _ := F32HRowBytes(cols)
	w := make([]byte, rows*rb)
	if err := PackF32H(w, src, rows, cols); err != nil {
		b.Fatal(err)
	}
	acts := randomRows(r, quant.F32, n, cols)
	out := make([]float32, rows*n)
	for _, c := range []struct {
		name string
		t    quant.Type
		w    []byte
	}{{"F32", quant.F32, src}, {"F32H", F32H, w}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				MatMul(c.t, out, c.w, cols, acts, n)
			}
		})
	}
}

// BenchmarkPackF32H measures PackF32H and F32HFits (the load-time cost
// of F32H) on a 2048×768 Gaussian matrix.
func BenchmarkPackF32H(b *testing.B) {
	const rows, cols = 2048, 768
	r := rand.New(rand.NewPCG(11, 12))
	src := make([]byte, 4*rows*cols)
	for i := 0; i < rows*cols; i++ {
		binary.LittleEndian.PutUint32(src[4*i:], math.Float32bits(float32(r.NormFloat64()*0.02)))
	}
	rb, _ := F32HRowBytes(cols)
	w := make([]byte, rows*rb)
	b.Run("Fits", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		for b.Loop() {
			if !F32HFits(src, rows, cols) {
				b.Fatal("does not fit")
			}
		}
	})
	b.Run("Pack", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		for b.Loop() {
			if err := PackF32H(w, src, rows, cols); err != nil {
				b.Fatal(err)
			}
		}
	})
}
