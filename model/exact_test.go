package model

import (
	"bufio"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// TestSincosfMatchesGlibc checks sincosf against glibc's sinf and cosf
// (x86-64, FMA build) on RoPE angle schedules and random floats. The
// golden file was written by a small C program calling sinf/cosf; each line
// holds the bits of the angle, its sine and its cosine.
func TestSincosfMatchesGlibc(t *testing.T) {
	f, err := os.Open("testdata/sincosf.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		var a, s, c uint32
		if _, err := fmt.Sscanf(sc.Text(), "%x %x %x", &a, &s, &c); err != nil {
			t.Fatalf("line %d: %v", n+1, err)
		}
		n++
		gs, gc := sincosf(math.Float32frombits(a))
		if math.Float32bits(gs) != s || math.Float32bits(gc) != c {
			t.Errorf("sincosf(%g) = %g, %g; glibc %g, %g", math.Float32frombits(a), gs, gc, math.Float32frombits(s), math.Float32frombits(c))
		}
	}
	if n < 1000 {
		t.Fatalf("only %d golden values", n)
	}
}

// TestDotLanes checks dotLanes, whose FMA fast path is inlined, against
// its definition (lane i%8 accumulates quant.FMA32, then hsum8) on random
// vectors of every length up to 70, and on sums whose float64 rounding
// lands on a float32 rounding midpoint, normal or subnormal (where adding
// in float64 and rounding to float32 would round twice).
func TestDotLanes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for n := 0; n <= 70; n++ {
		for trial := 0; trial < 50; trial++ {
			a, b := make([]float32, n), make([]float32, n)
			for i := range a {
				switch trial % 5 {
				case 3: // lane sums 1+2⁻²³, then + 2⁻²⁴(1−2⁻⁴⁶): the float64 sum is a midpoint
					a[i], b[i] = 1+0x1p-23, 1
					if i >= 8 {
						b[i] = 0x1p-24 * (1 - 0x1p-23)
					}
				case 4: // subnormal lane sums 2⁻¹²⁷+2⁻¹⁴⁹, then + 2⁻¹⁵⁰(1−2⁻⁴⁶): a subnormal midpoint
					a[i], b[i] = 0x1p-127+0x1p-149, 1
					if i >= 8 {
						a[i], b[i] = (1+0x1p-23)*0x1p-75, (1-0x1p-23)*0x1p-75
					}
				case 0: // generic values
					a[i], b[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
				case 1: // few significant bits: exact products, midpoint sums
					a[i] = float32(r.IntN(1<<12)-1<<11) * 0x1p-10
					b[i] = float32(int32(r.Uint32())>>8) * 0x1p-12
				default: // tiny values: subnormal sums
					a[i], b[i] = float32(r.NormFloat64())*0x1p-70, float32(r.NormFloat64())*0x1p-60
				}
			}
			var acc [8]float32
			for i := range a {
				acc[i%8] = quant.FMA32(a[i], b[i], acc[i%8])
			}
			want := hsum8(&acc)
			if got := dotLanes(a, b); math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("n=%d trial %d: dotLanes = %g, want %g", n, trial, got, want)
			}
		}
	}
}
