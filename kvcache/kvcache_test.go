package kvcache

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		typ Type
		tol float64 // max error relative to the head's range
	}{
		{F32, 0}, {F16, 1e-3}, {Q8, 1.0 / 254}, {Q4, 1.0 / 30}, {Q2, 1.0 / 6},
	} {
		t.Run(tc.typ.String(), func(t *testing.T) {
			for _, d := range []int{1, 7, 8, 64, 128} {
				x := make([]float32, d)
				for i := range x {
					x[i] = float32(rng.NormFloat64())
				}
				lo, hi := x[0], x[0]
				for _, v := range x {
					lo, hi = min(lo, v), max(hi, v)
				}
				rng := float64(max(hi-lo, abs(lo), abs(hi)))
				buf := make([]byte, tc.typ.headBytes(d))
				encodeHead(tc.typ, buf, x)
				got := make([]float32, d)
				decodeHead(tc.typ, got, buf)
				for i := range x {
					if e := math.Abs(float64(got[i] - x[i])); e > tc.tol*rng+1e-6 {
						t.Fatalf("d=%d: element %d: got %v, want %v (error %g > %g)", d, i, got[i], x[i], e, tc.tol*rng)
					}
				}
			}
		})
	}
}

func TestParseType(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Type
		ok   bool
	}{{"", F32, true}, {"F16", F16, true}, {"q8", Q8, true}, {"q4_0", Q4, true}, {"q2", Q2, true}, {"q3", 0, false}} {
		got, err := ParseType(tc.in)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("ParseType(%q) = %v, %v", tc.in, got, err)
		}
	}
}

func TestBytes(t *testing.T) {
	sh := Shape{Layers: 2, Capacity: 10, KVHeads: 4, HeadDimK: 8, HeadDimV: 8}
	for _, typ := range []Type{F32, F16, Q8, Q4, Q2} {
		var total int
		c, err := NewWith(sh, Options{Type: typ, Alloc: func(n int) []byte { total += n; return make([]byte, n) }})
		if err != nil {
			t.Fatal(err)
		}
		if int64(total) != Bytes(sh, typ) {
			t.Errorf("%v: allocated %d, Bytes %d", typ, total, Bytes(sh, typ))
		}
		if c.Type() != typ {
			t.Errorf("Type %v", c.Type())
		}
	}
	// Quantized keys keep a group of KeyGroup slots exact, so fewer bits
	// save memory once the capacity is well beyond a group.
	sh.HeadDimK, sh.HeadDimV, sh.Capacity = 64, 64, 512
	if Bytes(sh, Q2) >= Bytes(sh, Q4) || Bytes(sh, Q4) >= Bytes(sh, Q8) || Bytes(sh, Q8) >= Bytes(sh, F16) || Bytes(sh, F16) >= Bytes(sh, F32) {
		t.Error("fewer bits do not take less memory")
	}
}

// fill writes positions [0, n) into every layer of c, key = value = pos
// in every element, and returns the slots chosen per position for layer 0.
func fill(t *testing.T, c *Cache, n int) {
	t.Helper()
	sh := c.Shape()
	k := make([]float32, sh.KVHeads*sh.HeadDimK)
	v := make([]float32, sh.KVHeads*sh.HeadDimV)
	for p := c.Len(); p < n; p++ {
		for i := range k {
			k[i] = float32(p)
		}
		for i := range v {
			v[i] = float32(p)
		}
		for l := range sh.Layers {
			s, err := c.Slot(l)
			if err != nil {
				t.Fatal(err)
			}
			c.Store(l, s, k, v)
		}
		if err := c.SetLen(p + 1); err != nil {
			t.Fatal(err)
		}
	}
}

func held(c *Cache, layer int) map[int]bool {
	m := map[int]bool{}
	for s := range c.Used(layer) {
		m[c.Position(layer, s)] = true
	}
	return m
}

func TestNoEvictionFull(t *testing.T) {
	c, err := NewWith(Shape{Layers: 1, Capacity: 4, KVHeads: 1, HeadDimK: 2, HeadDimV: 2}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, c, 4)
	if _, err := c.Slot(0); !errors.Is(err, ErrFull) {
		t.Fatalf("Slot of a full cache: %v, want ErrFull", err)
	}
	if err := c.SetLen(5); !errors.Is(err, ErrFull) {
		t.Fatalf("SetLen beyond capacity: %v", err)
	}
	// Slots hold positions in order, as the exact attention path expects.
	for s := range 4 {
		if got := c.Key(0, s)[0]; got != float32(s) {
			t.Fatalf("slot %d holds %v", s, got)
		}
	}
	c.Reset()
	if c.Len() != 0 || c.Used(0) != 0 {
		t.Fatal("Reset left entries")
	}
}

func TestWindow(t *testing.T) {
	c, err := NewWith(Shape{Layers: 2, Capacity: 4, KVHeads: 2, HeadDimK: 4, HeadDimV: 4}, Options{Type: Q8, Policy: Window{}})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, c, 11)
	for l := range 2 {
		got := held(c, l)
		for p := 7; p < 11; p++ {
			if !got[p] {
				t.Fatalf("layer %d: window holds %v, want 7..10", l, got)
			}
		}
	}
	// Values come back (Q8 of a constant vector is exact).
	out := make([]float32, 4)
	for s := range 4 {
		c.DecodeValue(out, 1, s, 1)
		if out[0] != float32(c.Position(1, s)) {
			t.Fatalf("slot %d: value %v, position %d", s, out[0], c.Position(1, s))
		}
	}
}

func TestHeavyHitter(t *testing.T) {
	c, err := NewWith(Shape{Layers: 1, Capacity: 6, KVHeads: 1, HeadDimK: 2, HeadDimV: 2}, Options{Type: Q4, Policy: HeavyHitter{Recent: 2}})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, c, 6)
	// Position 1 is attended heavily, the others lightly.
	p := []float32{0.1, 5, 0.1, 0.2, 0.3, 0.3}
	c.Observe(0, p)
	fill(t, c, 12)
	got := held(c, 0)
	if !got[1] || !got[10] || !got[11] {
		t.Fatalf("heavy hitter kept %v, want 1, 10 and 11 among them", got)
	}
	if !c.Tracks() {
		t.Fatal("HeavyHitter does not track")
	}
}

func TestInvalid(t *testing.T) {
	if _, err := NewWith(Shape{Layers: 0, Capacity: 1, KVHeads: 1, HeadDimK: 1, HeadDimV: 1}, Options{}); err == nil {
		t.Error("zero layers accepted")
	}
	if _, err := NewWith(Shape{Layers: 1, Capacity: 1, KVHeads: 1, HeadDimK: 1, HeadDimV: 1}, Options{Type: 9}); err == nil {
		t.Error("unknown type accepted")
	}
}

// TestTruncate writes positions, truncates and writes different ones:
// the cache then equals one that was written the second way from the
// start (F32, F16), and an evicted cache refuses.
func TestTruncate(t *testing.T) {
	for _, typ := range []Type{F32, F16} {
		sh := Shape{Layers: 2, Capacity: 8, KVHeads: 2, HeadDimK: 4, HeadDimV: 4}
		a, _ := NewWith(sh, Options{Type: typ})
		b, _ := NewWith(sh, Options{Type: typ})
		vec := func(seed, l, p int) []float32 {
			v := make([]float32, 8)
			for i := range v {
				v[i] = float32(seed*1000+l*100+p*10+i) / 7
			}
			return v
		}
		write := func(c *Cache, seed, from, to int) {
			for p := from; p < to; p++ {
				for l := range sh.Layers {
					s, err := c.Slot(l)
					if err != nil {
						t.Fatal(err)
					}
					c.Store(l, s, vec(seed, l, p), vec(seed+1, l, p))
				}
				if err := c.SetLen(p + 1); err != nil {
					t.Fatal(err)
				}
			}
		}
		write(a, 1, 0, 6)
		if err := a.Truncate(3); err != nil {
			t.Fatal(err)
		}
		if a.Len() != 3 || a.Used(0) != 3 || a.Position(1, 3) != -1 {
			t.Fatalf("%v: after Truncate(3): len %d used %d pos %d", typ, a.Len(), a.Used(0), a.Position(1, 3))
		}
		write(a, 2, 3, 7)
		write(b, 1, 0, 3)
		write(b, 2, 3, 7)
		for l := range sh.Layers {
			for s := range 7 {
				for h := range sh.KVHeads {
					kx, ky := make([]float32, 4), make([]float32, 4)
					a.DecodeKey(kx, l, s, h)
					b.DecodeKey(ky, l, s, h)
					if fmt.Sprint(kx) != fmt.Sprint(ky) {
						t.Fatalf("%v layer %d slot %d head %d: keys %v != %v", typ, l, s, h, kx, ky)
					}
					ox, oy := make([]float32, 4), make([]float32, 4)
					a.DecodeValue(ox, l, s, h)
					b.DecodeValue(oy, l, s, h)
					if fmt.Sprint(ox) != fmt.Sprint(oy) {
						t.Fatalf("%v values differ at layer %d slot %d", typ, l, s)
					}
				}
			}
		}
		if err := a.Truncate(8); !errors.Is(err, ErrTruncate) {
			t.Errorf("Truncate beyond Len: %v", err)
		}
	}
	sh := Shape{Layers: 1, Capacity: 2, KVHeads: 1, HeadDimK: 4, HeadDimV: 4}
	c, _ := NewWith(sh, Options{Policy: Window{}})
	for p := range 3 {
		s, _ := c.Slot(0)
		c.Store(0, s, make([]float32, 4), make([]float32, 4))
		c.SetLen(p + 1)
	}
	if err := c.Truncate(1); !errors.Is(err, ErrTruncate) {
		t.Errorf("Truncate of an evicted cache: %v, want ErrTruncate", err)
	}
}

// TestExactPrefix checks where a quantized cache can be truncated
// exactly: anywhere in the key group still staged, at a group's start
// otherwise; a float cache anywhere.
func TestExactPrefix(t *testing.T) {
	sh := Shape{Layers: 2, Capacity: 128, KVHeads: 2, HeadDimK: 8, HeadDimV: 8}
	fill := func(c *Cache, n int) {
		k := make([]float32, sh.KVHeads*sh.HeadDimK)
		for p := c.Len(); p < n; p++ {
			for i := range k {
				k[i] = float32(p*7+i) / 10
			}
			for l := range sh.Layers {
				slot, err := c.Slot(l)
				if err != nil {
					t.Fatal(err)
				}
				c.Store(l, slot, k, k)
			}
			if err := c.SetLen(p + 1); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		typ      Type
		len      int
		n, exact int
	}{
		{F32, 45, 13, 13}, {F16, 45, 40, 40},
		{Q8, 45, 13, 0}, {Q8, 45, 40, 40}, {Q8, 70, 40, 32}, {Q8, 45, 32, 32}, {Q8, 45, 45, 45},
		{Q4, 20, 13, 13}, {Q4, 32, 13, 13}, {Q4, 33, 13, 0}, {Q4, 70, 64, 64}, {Q4, 70, 65, 65}, {Q4, 100, 65, 64},
	} {
		c, err := NewWith(sh, Options{Type: tc.typ})
		if err != nil {
			t.Fatal(err)
		}
		fill(c, tc.len)
		if got := c.ExactPrefix(tc.n); got != tc.exact {
			t.Errorf("%v cache of %d positions: ExactPrefix(%d) = %d, want %d", tc.typ, tc.len, tc.n, got, tc.exact)
		}
	}
	// Truncated into a quantized group, the group is staged from decoded
	// keys: nothing in it is exact any more.
	c, err := NewWith(sh, Options{Type: Q8})
	if err != nil {
		t.Fatal(err)
	}
	fill(c, 45)
	if err := c.Truncate(13); err != nil {
		t.Fatal(err)
	}
	fill(c, 20)
	if got := c.ExactPrefix(15); got != 0 {
		t.Errorf("after Truncate(13) into a quantized group: ExactPrefix(15) = %d, want 0", got)
	}
}
