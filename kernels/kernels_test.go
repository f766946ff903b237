package kernels

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// shapes are the (rows, cols) pairs every kernel is tested on: one block,
// odd block counts that exercise the kernels' tails, odd row counts, and a
// realistic width.
var shapes = []struct{ rows, cols int }{
	{1, 32}, {3, 32}, {1, 64}, {5, 96}, {7, 224}, {17, 256}, {4, 512},
	{9, 4096}, {33, 768}, {2, 1280}, {3, 1}, {2, 7}, {5, 33}, {3, 100},
}

// shapesFor returns the shapes whose width is a whole number of t's blocks.
func shapesFor(t quant.Type) []struct{ rows, cols int } {
	var s []struct{ rows, cols int }
	for _, sh := range shapes {
		if sh.cols%t.BlockSize() == 0 {
			s = append(s, sh)
		}
	}
	return s
}

// kernelTypes returns the types a tier has assembly kernels for.
// The repacked types, the q4_0Gemv key and QSF's own types (ids from
// 0x8000), which have tests of their own, are left out.
func kernelTypes(tr *Tier) []quant.Type {
	var ts []quant.Type
	for t, k := range tr.table {
		if k.rows != nil && k.rowsTier != genericTier.name && t < 0x8000 {
			ts = append(ts, t)
		}
	}
	slices.Sort(ts)
	return ts
}

// within reports whether got agrees with want to 1e-5 of the magnitude of
// the terms that were summed.
func within(got float32, want, mag float64) bool {
	return math.Abs(float64(got)-want) <= 1e-5*mag+1e-30
}

// TestKernelsVsRef checks every assembly kernel of every available tier
// against the tests' own scalar reference, without going through package
// quant.
func TestKernelsVsRef(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tr := range available {
		for _, typ := range kernelTypes(tr) {
			ref, ok := refDots[typ]
			if !ok {
				t.Errorf("%s/%v: no reference kernel in the tests", tr.name, typ)
				continue
			}
			for _, sh := range shapesFor(typ) {
				t.Run(fmt.Sprintf("%s/%v/%dx%d", tr.name, typ, sh.rows, sh.cols), func(t *testing.T) {
					w := randomRows(r, typ, sh.rows, sh.cols)
					act := randomRows(r, vecDotType[typ], 1, sh.cols)
					rowBytes, _ := quant.RowBytes(typ, sh.cols)
					out := make([]float32, sh.rows+1)
					out[sh.rows] = 42 // sentinel: must not be written
					aux := tr.prepare(typ, nil, act, sh.cols)
					tr.rowsOf(typ)(out[:sh.rows], w, rowBytes, sh.cols, act, aux)
					for i := 0; i < sh.rows; i++ {
						want, mag := ref(sh.cols, w[i*rowBytes:(i+1)*rowBytes], act)
						if !within(out[i], want, mag) {
							t.Errorf("row %d: got %g, want %g (mag %g)", i, out[i], want, mag)
						}
					}
					if out[sh.rows] != 42 {
						t.Errorf("kernel wrote past the end of out")
					}
				})
			}
		}
	}
}

// TestRefVsQuant checks the tests' reference kernels against package
// quant's, once quant implements the type.
func TestRefVsQuant(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for typ, ref := range refDots {
		tt, err := quant.Lookup(typ)
		if err != nil {
			t.Logf("%v: %v; skipped", typ, err)
			continue
		}
		for _, sh := range shapesFor(typ) {
			w := randomRows(r, typ, 1, sh.cols)
			act := randomRows(r, vecDotType[typ], 1, sh.cols)
			want, mag := ref(sh.cols, w, act)
			if got := tt.Dot(sh.cols, w, act); !within(got, want, mag) {
				t.Errorf("%v cols=%d: quant.Dot = %g, reference %g", typ, sh.cols, got, want)
			}
		}
	}
}

// TestMatVecTiers runs MatVec under every tier, forced with SetTier, and
// compares each with the generic tier.
func TestMatVecTiers(t *testing.T) {
	defer SetTier(DefaultTier().Name())
	r := rand.New(rand.NewPCG(5, 6))
	for typ := range refDots {
		if _, err := quant.Lookup(typ); err != nil {
			t.Logf("%v: %v; skipped", typ, err)
			continue
		}
		for _, sh := range shapesFor(typ) {
			w := randomRows(r, typ, sh.rows, sh.cols)
			act := randomRows(r, vecDotType[typ], 1, sh.cols)
			ref := refDots[typ]
			rowBytes, _ := quant.RowBytes(typ, sh.cols)
			for _, name := range Tiers() {
				if err := SetTier(name); err != nil {
					t.Fatal(err)
				}
				out := make([]float32, sh.rows)
				MatVec(typ, out, w, sh.cols, act)
				for i := range out {
					want, mag := ref(sh.cols, w[i*rowBytes:(i+1)*rowBytes], act)
					if !within(out[i], want, mag) {
						t.Errorf("%s/%v/%dx%d row %d: got %g, want %g", name, typ, sh.rows, sh.cols, i, out[i], want)
					}
				}
			}
		}
	}
}

func TestSetTier(t *testing.T) {
	defer SetTier(DefaultTier().Name())
	for _, name := range Tiers() {
		if err := SetTier(name); err != nil {
			t.Errorf("SetTier(%q) = %v", name, err)
		}
		if DefaultTier().Name() != name {
			t.Errorf("after SetTier(%q), DefaultTier().Name() = %q", name, DefaultTier().Name())
		}
	}
	if err := SetTier(""); err != nil || DefaultTier() != BestTier() {
		t.Errorf("SetTier(\"\") = %v, default %s, want nil and the best tier %s", err, DefaultTier().Name(), BestTier().Name())
	}
	for _, name := range []string{"avx512", "avx2", "sse9", "neon"} {
		if slices.Contains(Tiers(), name) {
			continue
		}
		before := DefaultTier().Name()
		if err := SetTier(name); !errors.Is(err, ErrTier) {
			t.Errorf("SetTier(%q) = %v, want ErrTier", name, err)
		}
		if DefaultTier().Name() != before {
			t.Errorf("failed SetTier(%q) changed the tier", name)
		}
	}
	if !slices.Contains(Tiers(), "generic") {
		t.Errorf("Tiers() = %q lacks generic", Tiers())
	}
}
