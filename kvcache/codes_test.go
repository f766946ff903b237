package kvcache

import (
	"math/rand/v2"
	"testing"
)

// TestCodesDecode checks that KeyCodes and ValueCodes hand out what
// DecodeKey and DecodeValue decode, by the formulas their documentation
// gives, for every quantized type, staged and stored keys, odd head widths.
func TestCodesDecode(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, typ := range []Type{Q8, Q4, Q2} {
		sh := Shape{Layers: 2, Capacity: 2*KeyGroup + 5, KVHeads: 3, HeadDimK: 7, HeadDimV: 5}
		c, err := NewWith(sh, Options{Type: typ})
		if err != nil {
			t.Fatal(err)
		}
		k := make([]float32, sh.KVHeads*sh.HeadDimK)
		v := make([]float32, sh.KVHeads*sh.HeadDimV)
		for p := range sh.Capacity {
			for i := range k {
				k[i] = float32(rng.NormFloat64())
			}
			for i := range v {
				v[i] = float32(rng.NormFloat64())
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
		bits := typ.Bits()
		code := func(codes []byte, i int) byte { return codes[i*bits/8] >> (bits * (i % (8 / bits))) & (1<<bits - 1) }
		dk, dv := make([]float32, sh.HeadDimK), make([]float32, sh.HeadDimV)
		staged := 0
		for l := range sh.Layers {
			for s := range c.Used(l) {
				for h := range sh.KVHeads {
					c.DecodeKey(dk, l, s, h)
					ck := c.KeyCodes(l, s, h)
					if ck.First > s || s >= ck.First+ck.Slots || ck.First%KeyGroup != 0 {
						t.Fatalf("%v: slot %d in a group of slots [%d, %d)", typ, s, ck.First, ck.First+ck.Slots)
					}
					j := s - ck.First
					if ck.Exact != nil {
						staged++
					}
					for i, want := range dk {
						var got float32
						if ck.Exact != nil {
							got = ck.Exact[j*ck.Stride+i]
						} else {
							got = getF32(ck.Offsets[4*i:]) + float32(getF32(ck.Scales[4*i:])*float32(code(ck.Codes[j*ck.Stride:], i)))
						}
						if got != want {
							t.Fatalf("%v layer %d slot %d head %d key %d: codes give %v, DecodeKey %v", typ, l, s, h, i, got, want)
						}
					}
					c.DecodeValue(dv, l, s, h)
					vc, scale, off := c.ValueCodes(l, s, h)
					for i, want := range dv {
						var got float32
						if typ == Q8 {
							got = float32(scale * float32(int8(vc[i])))
						} else {
							got = float32(scale*float32(code(vc, i))) + off
						}
						if got != want {
							t.Fatalf("%v layer %d slot %d head %d value %d: codes give %v, DecodeValue %v", typ, l, s, h, i, got, want)
						}
					}
				}
			}
		}
		if staged == 0 {
			t.Fatalf("%v: no key was staged exact", typ)
		}
	}
	c, _ := New(1, 4, 2, 2)
	if ck := c.KeyCodes(0, 0, 0); ck.Exact != nil || ck.Codes != nil {
		t.Error("KeyCodes of an F32 cache is not nil")
	}
	if codes, _, _ := c.ValueCodes(0, 0, 0); codes != nil {
		t.Error("ValueCodes of an F32 cache is not nil")
	}
}
