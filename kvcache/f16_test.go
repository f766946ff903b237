package kvcache

import (
	"math/rand/v2"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// TestF16Layout stores random keys and values in F16 caches (with and
// without a sliding window, capacities on and off a multiple of 32) and
// checks that KeysF16 and ValuesF16 hold them rounded to nearest even, a
// row per slot with the KV heads side by side, and that DecodeKey and
// DecodeValue read them. Past the capacity, the window overwrites the
// oldest slot in both.
func TestF16Layout(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, tc := range []struct {
		capacity int
		policy   Policy
		steps    int
	}{{5, nil, 5}, {32, nil, 20}, {40, nil, 40}, {7, Window{}, 19}, {33, Window{}, 70}} {
		sh := Shape{Layers: 2, Capacity: tc.capacity, KVHeads: 2, HeadDimK: 6, HeadDimV: 5}
		c, err := NewWith(sh, Options{Type: F16, Policy: tc.policy})
		if err != nil {
			t.Fatal(err)
		}
		kd, vd := sh.KVHeads*sh.HeadDimK, sh.KVHeads*sh.HeadDimV
		want := make(map[[2]int][2][]float32) // layer, slot -> k, v
		for pos := range tc.steps {
			for l := range sh.Layers {
				k, v := make([]float32, kd), make([]float32, vd)
				for i := range k {
					k[i] = float32(rng.NormFloat64())
				}
				for i := range v {
					v[i] = float32(rng.NormFloat64())
				}
				slot, err := c.Slot(l)
				if err != nil {
					t.Fatal(err)
				}
				if tc.policy != nil && pos >= tc.capacity && slot != pos%tc.capacity {
					t.Fatalf("capacity %d position %d: slot %d", tc.capacity, pos, slot)
				}
				c.Store(l, slot, k, v)
				want[[2]int{l, slot}] = [2][]float32{k, v}
			}
			if err := c.SetLen(pos + 1); err != nil {
				t.Fatal(err)
			}
		}
		for l := range sh.Layers {
			n := c.Used(l)
			keys, values := c.KeysF16(l, n), c.ValuesF16(l, n)
			if len(keys) != n*kd || len(values) != n*vd {
				t.Fatalf("capacity %d: %d keys, %d values for %d slots", tc.capacity, len(keys), len(values), n)
			}
			for s := range n {
				e := want[[2]int{l, s}]
				for i, x := range e[0] {
					if got := keys[s*kd+i]; got != quant.FP32ToFP16(x) {
						t.Fatalf("capacity %d layer %d slot %d key %d: %#04x, want %#04x", tc.capacity, l, s, i, got, quant.FP32ToFP16(x))
					}
				}
				for h := range sh.KVHeads {
					// DecodeKey reads the same layout.
					k := make([]float32, sh.HeadDimK)
					c.DecodeKey(k, l, s, h)
					for i, x := range e[0][h*sh.HeadDimK : (h+1)*sh.HeadDimK] {
						if want := quant.FP16ToFP32(quant.FP32ToFP16(x)); k[i] != want {
							t.Fatalf("DecodeKey slot %d head %d: %v, want %v", s, h, k[i], want)
						}
					}
				}
				for i, x := range e[1] {
					if got := values[s*vd+i]; got != quant.FP32ToFP16(x) {
						t.Fatalf("capacity %d layer %d slot %d value %d: %#04x, want %#04x", tc.capacity, l, s, i, got, quant.FP32ToFP16(x))
					}
				}
				// DecodeValue reads the same layout.
				out := make([]float32, sh.HeadDimV)
				c.DecodeValue(out, l, s, 1)
				for d, o := range out {
					if w := quant.FP16ToFP32(quant.FP32ToFP16(e[1][sh.HeadDimV+d])); o != w {
						t.Fatalf("DecodeValue slot %d dim %d: %v, want %v", s, d, o, w)
					}
				}
			}
		}
		if got, want := int64(len(c.kdata)+len(c.vdata)), Bytes(sh, F16)-int64(sh.Layers*tc.capacity*8+sh.Layers*4); got != want {
			t.Errorf("capacity %d: %d bytes of entries, Bytes says %d", tc.capacity, got, want)
		}
	}
	c, _ := New(1, 4, 2, 2)
	if k := c.KeysF16(0, 1); k != nil {
		t.Error("KeysF16 of an F32 cache is not nil")
	}
	if v := c.ValuesF16(0, 1); v != nil {
		t.Error("ValuesF16 of an F32 cache is not nil")
	}
}

// BenchmarkStore measures storing one position's keys and values in every
// layer of a cache shaped as 12L-768's (12 KV heads of 64, 256 slots), f32
// against f16: the f16 cache converts each row with the vector kernel.
func BenchmarkStore(b *testing.B) {
	sh := Shape{Layers: 12, Capacity: 256, KVHeads: 12, HeadDimK: 64, HeadDimV: 64}
	rng := rand.New(rand.NewPCG(1, 2))
	k, v := make([]float32, sh.KVHeads*sh.HeadDimK), make([]float32, sh.KVHeads*sh.HeadDimV)
	for i := range k {
		k[i], v[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
	}
	for _, typ := range []Type{F32, F16} {
		b.Run(typ.String(), func(b *testing.B) {
			c, err := NewWith(sh, Options{Type: typ, Policy: Window{}})
			if err != nil {
				b.Fatal(err)
			}
			for i := range b.N {
				for l := range sh.Layers {
					s, err := c.Slot(l)
					if err != nil {
						b.Fatal(err)
					}
					c.Store(l, s, k, v)
				}
				c.SetLen(i + 1)
			}
		})
	}
}
