//go:build amd64 && !purego

package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// arbitraryRows returns rows×cols elements of Q4_0 or Q8_0 with every
// quant byte random, -128 included (randomRows stays in [-127, 127], as
// quantizers do; the AVX2 sign trick wraps -(-128), and the avx512 kernels
// must wrap alike), and finite random scales.
func arbitraryRows(r *rand.Rand, t quant.Type, rows, cols int) []byte {
	n, _ := quant.RowBytes(t, cols)
	b := make([]byte, rows*n)
	bb := t.BlockBytes()
	for o := 0; o < len(b); o += bb {
		for j := 2; j < bb; j++ {
			b[o+j] = byte(r.IntN(256))
		}
		if r.IntN(8) == 0 { // whole blocks of extremes
			v := []byte{0x80, 0x7f, 0x81, 0x00, 0xff, 0x88}[r.IntN(6)]
			for j := 2; j < bb; j++ {
				b[o+j] = v
			}
		}
		putF16(b[o:], scale(r))
	}
	return b
}

// TestAVX512Kernels checks the avx512 kernels, called directly, against
// the avx2 ones bit for bit on arbitrary bytes, and against the generic
// kernels of the repacked types, for odd numbers of groups (the avx512
// Q4_0x8 kernels take pairs of groups and compute a last odd one alone
// or hand it to the avx2 kernel), odd numbers of blocks and one block, and tiles whose output
// stride exceeds the rows. It runs whether or not the tier is listed.
func TestAVX512Kernels(t *testing.T) {
	if !haveAVX512 {
		t.Skip("CPU lacks AVX-512 F/BW/VL/VNNI")
	}
	r := rand.New(rand.NewPCG(51, 52))
	for _, rc := range repackCases {
		for _, sh := range []struct{ rows, cols int }{
			{8, 32}, {16, 32}, {24, 96}, {40, 64}, {4, 32}, {12, 224}, {32, 768}, {136, 320}, {64, 4096},
		} {
			if sh.rows%rc.group != 0 {
				continue
			}
			for _, arbitrary := range []bool{false, true} {
				var w, act, acts []byte
				if arbitrary {
					w = arbitraryRows(r, rc.file, sh.rows, sh.cols)
					acts = arbitraryRows(r, quant.Q8_0, maxTileTokens, sh.cols)
				} else {
					w = randomRows(r, rc.file, sh.rows, sh.cols)
					acts = randomRows(r, quant.Q8_0, maxTileTokens, sh.cols)
				}
				actBytes := len(acts) / maxTileTokens
				act = acts[:actBytes]
				rowBytes, _ := quant.RowBytes(rc.file, sh.cols)
				packed := make([]byte, len(w))
				if _, err := Repack(rc.file, packed, w, sh.rows, sh.cols); err != nil {
					t.Fatal(err)
				}
				aux := prepQ4_0x8(nil, act, sh.cols)
				name := fmt.Sprintf("%s/%dx%d/arbitrary=%v", typeName(rc.packed), sh.rows, sh.cols, arbitrary)

				// Decode.
				got := make([]float32, sh.rows)
				want := make([]float32, sh.rows)
				avx512Tier.run(mustLookup(rc.packed), got, packed, rowBytes, sh.cols, act, aux)
				avx2Tier.run(mustLookup(rc.packed), want, packed, rowBytes, sh.cols, act, aux)
				equalBits(t, name+"/decode vs avx2", got, want)
				if !arbitrary {
					genericTier.run(mustLookup(rc.packed), want, packed, rowBytes, sh.cols, act, genericTier.prepare(rc.packed, nil, act, sh.cols))
					equalBits(t, name+"/decode vs generic", got, want)
				}

				// Tile, output rows spaced wider than the matrix.
				tt := mustLookup(rc.packed)
				k512, k2 := tileFor(avx512Tier, tt), tileFor(avx2Tier, tt)
				if k512 == nil || k512 == k2 {
					t.Fatalf("%s: avx512 has no tile kernel of its own", name)
				}
				// The avx2 tile, four activations at a time, gives the
				// bits of the avx512 one (of its width) and of its rest.
				n := k512.width()
				ostride := sh.rows + 3
				got = make([]float32, n*ostride)
				want = make([]float32, n*ostride)
				for i := range got {
					got[i], want[i] = 42, 42
				}
				pk := make([]byte, k512.packBytes(sh.cols))
				k512.pack(pk, acts[:n*actBytes], actBytes, sh.cols)
				k512.run(got, ostride, packed, rowBytes, sh.cols, sh.rows, pk)
				pk2 := make([]byte, k2.packBytes(sh.cols))
				for t0 := 0; t0 < n; t0 += k2.width() {
					k2.pack(pk2, acts[t0*actBytes:(t0+k2.width())*actBytes], actBytes, sh.cols)
					k2.run(want[t0*ostride:], ostride, packed, rowBytes, sh.cols, sh.rows, pk2)
				}
				equalBits(t, name+"/tile vs avx2", got, want)
				for r := k512.rest; r != nil; r = r.rest { // the chain of narrower tiles
					rest := make([]float32, r.width()*ostride)
					for i := range rest {
						rest[i] = 42
					}
					pkr := make([]byte, r.packBytes(sh.cols))
					r.pack(pkr, acts[:r.width()*actBytes], actBytes, sh.cols)
					r.run(rest, ostride, packed, rowBytes, sh.cols, sh.rows, pkr)
					equalBits(t, fmt.Sprintf("%s/rest tile of %d vs avx2", name, r.width()), rest, want[:len(rest)])
				}
				for tok := 0; tok < n && !arbitrary; tok++ {
					one := make([]float32, sh.rows)
					a := acts[tok*actBytes : (tok+1)*actBytes]
					genericTier.run(tt, one, packed, rowBytes, sh.cols, a, genericTier.prepare(tt.Type, nil, a, sh.cols))
					equalBits(t, fmt.Sprintf("%s/tile token %d vs generic", name, tok), got[tok*ostride:tok*ostride+sh.rows], one)
				}
			}
		}
	}
}

// maxTileTokens is the widest tile kernel's number of activations.
const maxTileTokens = 8

func mustLookup(t quant.Type) *quant.Traits {
	tt, err := Lookup(t)
	if err != nil {
		panic(err)
	}
	return tt
}

func equalBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Errorf("%s: [%d] = %g, want %g", what, i, got[i], want[i])
			return
		}
	}
}

// BenchmarkAVX512 compares the avx2 and avx512 tiers side by side on a
// 768-wide model's FFN matrix (2048×768): MatMul of 32 activations (the
// tiles, prefill) and MatVec (decode), one thread, for the types the
// avx512 tier has kernels of its own (Q4_0 and Q8_0 repacked, F32, F16,
// Q4_K).
// cpu-ms/op is CPU time of the thread, less sensitive to other load than
// the wall time.
func BenchmarkAVX512(b *testing.B) {
	if !haveAVX512 {
		b.Skip("CPU lacks AVX-512 F/BW/VL/VNNI")
	}
	const rows, cols, n = 2048, 768, 32
	for _, typ := range []quant.Type{Q4_0x8, Q8_0x4, quant.F32, quant.F16, quant.Q4_K} {
		file := typ
		if k := repackOf(typ); k != nil {
			file = k.file
		}
		r := rand.New(rand.NewPCG(23, 24))
		w := randomRows(r, file, rows, cols)
		if file != typ {
			if _, err := Repack(file, w, w, rows, cols); err != nil {
				b.Fatal(err)
			}
		}
		acts := randomRows(r, vecDotType[file], n, cols)
		out := make([]float32, n*rows)
		for _, op := range []string{"MatMul", "MatVec"} {
			for _, tr := range []*Tier{avx2Tier, avx512Tier} {
				b.Run(fmt.Sprintf("%s/%s/%s", typeName(typ), op, tr.Name()), func(b *testing.B) {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					c0 := threadCPU()
					for b.Loop() {
						if op == "MatMul" {
							tr.MatMul(typ, out, w, cols, acts, n)
						} else {
							tr.MatVec(typ, out[:rows], w, cols, acts[:len(acts)/n])
						}
					}
					if c0 >= 0 {
						b.ReportMetric(float64(threadCPU()-c0)/float64(b.N)/1e6, "cpu-ms/op")
					}
				})
			}
		}
	}
}

// TestF32T8TileBytes checks the F32 tile size the avx512 tier derives
// from the L2 cache's.
func TestF32T8TileBytes(t *testing.T) {
	for _, c := range []struct{ l2, want int }{
		{-1, 128 << 10}, {0, 128 << 10}, {256 << 10, 128 << 10}, {512 << 10, 192 << 10},
		{1 << 20, 384 << 10}, {2 << 20, 384 << 10}, {32 << 20, 384 << 10},
	} {
		if got := f32T8TileBytes(c.l2); got != c.want {
			t.Errorf("f32T8TileBytes(%d) = %d, want %d", c.l2, got, c.want)
		}
	}
}

// TestF32T8ManyBlocks checks the avx512 F32 tile of eight activations on
// more blocks of rows with column slabs than one slab group takes
// (f32SlabBlocks8), which MatMul's row tiles never hand it, against the
// one-activation kernel bit for bit.
func TestF32T8ManyBlocks(t *testing.T) {
	if !haveAVX512 {
		t.Skip("no AVX-512")
	}
	r := rand.New(rand.NewPCG(51, 52))
	for _, sh := range []struct{ rows, cols int }{{3*f32SlabBlocks8 + 5, 800}, {3*(2*f32SlabBlocks8) + 3, 32*f32SlabChunks + 33}} {
		w := randomRows(r, quant.F32, sh.rows, sh.cols)
		acts := randomRows(r, quant.F32, 8, sh.cols)
		packed := make([]byte, packBytesF32T8(sh.cols))
		packF32T8(packed, acts, 4*sh.cols, sh.cols)
		got := make([]float32, 8*sh.rows)
		f32T8AVX512(got, sh.rows, w, 4*sh.cols, sh.cols, sh.rows, packed)
		want := make([]float32, sh.rows)
		for a := 0; a < 8; a++ {
			f32AVX512(want, w, 4*sh.cols, sh.cols, acts[4*sh.cols*a:4*sh.cols*(a+1)], nil)
			for i, v := range want {
				if g := got[a*sh.rows+i]; math.Float32bits(g) != math.Float32bits(v) {
					t.Fatalf("%dx%d: activation %d, row %d: %g, want %g", sh.rows, sh.cols, a, i, g, v)
				}
			}
		}
	}
}

// TestQ4_0x8TilesGFNI checks the avx512 Q4_0x8 tiles of the other GFNI
// choice than the tier's (TestAVX512Kernels and TestTierTilesBits check
// the tier's against avx2 and generic) bit for bit against the tier's:
// every width, odd numbers of groups, one block and many, extreme
// values.
func TestQ4_0x8TilesGFNI(t *testing.T) {
	if !haveAVX512 {
		t.Skip("CPU lacks AVX-512 F/BW/VL/VNNI")
	}
	if !haveGFNI {
		t.Skip("CPU lacks GFNI: the tier's tiles are the only ones it runs")
	}
	other := q4_0x8TilesAVX512(!haveGFNI)
	r := rand.New(rand.NewPCG(61, 62))
	for _, sh := range []struct{ rows, cols int }{{8, 32}, {16, 32}, {24, 96}, {40, 64}, {136, 320}, {64, 4096}} {
		for _, arbitrary := range []bool{false, true} {
			var w, acts []byte
			if arbitrary {
				w = arbitraryRows(r, quant.Q4_0, sh.rows, sh.cols)
				acts = arbitraryRows(r, quant.Q8_0, 8, sh.cols)
			} else {
				w = randomRows(r, quant.Q4_0, sh.rows, sh.cols)
				acts = randomRows(r, quant.Q8_0, 8, sh.cols)
			}
			actBytes := len(acts) / 8
			rowBytes, _ := quant.RowBytes(quant.Q4_0, sh.cols)
			packed := make([]byte, len(w))
			if _, err := Repack(quant.Q4_0, packed, w, sh.rows, sh.cols); err != nil {
				t.Fatal(err)
			}
			for n := 2; n <= 8; n++ {
				ostride := sh.rows + 3
				got := make([]float32, n*ostride)
				want := make([]float32, n*ostride)
				for i := range got {
					got[i], want[i] = 42, 42
				}
				k, ko := &tileQ4_0x8AVX512[n], &other[n]
				pk := make([]byte, k.packBytes(sh.cols))
				k.pack(pk, acts[:n*actBytes], actBytes, sh.cols)
				k.run(want, ostride, packed, rowBytes, sh.cols, sh.rows, pk)
				ko.run(got, ostride, packed, rowBytes, sh.cols, sh.rows, pk)
				equalBits(t, fmt.Sprintf("Q4_0x8/%dx%d/arbitrary=%v/n=%d gfni=%v vs %v", sh.rows, sh.cols, arbitrary, n, !haveGFNI, haveGFNI), got, want)
			}
		}
	}
}
