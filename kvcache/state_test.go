package kvcache

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

// TestStateRoundTrip saves a cache, reads it into a fresh one and checks
// that both answer the same and stay the same as more positions arrive.
func TestStateRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, typ := range []Type{F32, F16, Q8, Q4, Q2} {
		for _, policy := range []Policy{nil, Window{}} {
			sh := Shape{Layers: 2, Capacity: 40, KVHeads: 2, HeadDimK: 8, HeadDimV: 8}
			a, _ := NewWith(sh, Options{Type: typ, Policy: policy})
			b, _ := NewWith(sh, Options{Type: typ, Policy: policy})
			write := func(c *Cache, k, v [][]float32, from int) {
				for p := range k {
					for l := range sh.Layers {
						s, err := c.Slot(l)
						if err != nil {
							t.Fatal(err)
						}
						c.Store(l, s, k[p], v[p])
					}
					if err := c.SetLen(from + p + 1); err != nil {
						t.Fatal(err)
					}
				}
			}
			vecs := func(n int) [][]float32 {
				out := make([][]float32, n)
				for i := range out {
					out[i] = make([]float32, 16)
					for j := range out[i] {
						out[i][j] = rng.Float32()*2 - 1
					}
				}
				return out
			}
			first := 35
			if policy != nil {
				first = 45 // evicted
			}
			write(a, vecs(first), vecs(first), 0)
			var buf bytes.Buffer
			n, err := a.WriteTo(&buf)
			if err != nil || n != int64(buf.Len()) || n != a.StateBytes() {
				t.Fatalf("%v: WriteTo %d bytes (buffer %d, StateBytes %d): %v", typ, n, buf.Len(), a.StateBytes(), err)
			}
			saved := bytes.Clone(buf.Bytes())
			if _, err := b.ReadFrom(&buf); err != nil {
				t.Fatalf("%v: ReadFrom: %v", typ, err)
			}
			more, moreV := vecs(3), vecs(3)
			write(a, more, moreV, first)
			write(b, more, moreV, first)
			same(t, typ, a, b)

			// Every truncation is an error that leaves the cache empty.
			for _, cut := range []int{0, 10, len(saved) / 2, len(saved) - 1} {
				c, _ := NewWith(sh, Options{Type: typ, Policy: policy})
				if _, err := c.ReadFrom(bytes.NewReader(saved[:cut])); !errors.Is(err, ErrState) || c.Len() != 0 {
					t.Fatalf("%v: ReadFrom of %d of %d bytes: %v, len %d", typ, cut, len(saved), err, c.Len())
				}
			}
			// Another shape is refused.
			other, _ := NewWith(Shape{Layers: 2, Capacity: 41, KVHeads: 2, HeadDimK: 8, HeadDimV: 8}, Options{Type: typ, Policy: policy})
			if _, err := other.ReadFrom(bytes.NewReader(saved)); !errors.Is(err, ErrState) {
				t.Fatalf("%v: ReadFrom into another shape: %v", typ, err)
			}
		}
	}
}

func same(t *testing.T, typ Type, a, b *Cache) {
	t.Helper()
	if a.Len() != b.Len() || a.Used(1) != b.Used(1) {
		t.Fatalf("%v: len %d/%d used %d/%d", typ, a.Len(), b.Len(), a.Used(1), b.Used(1))
	}
	for l := range a.sh.Layers {
		for s := range a.Used(l) {
			if a.Position(l, s) != b.Position(l, s) {
				t.Fatalf("%v: layer %d slot %d position %d/%d", typ, l, s, a.Position(l, s), b.Position(l, s))
			}
			for h := range a.sh.KVHeads {
				kx, ky := make([]float32, a.sh.HeadDimK), make([]float32, a.sh.HeadDimK)
				a.DecodeKey(kx, l, s, h)
				b.DecodeKey(ky, l, s, h)
				for i := range kx {
					if kx[i] != ky[i] {
						t.Fatalf("%v: layer %d slot %d head %d key %v != %v", typ, l, s, h, kx, ky)
					}
				}
				ox, oy := make([]float32, 8), make([]float32, 8)
				a.DecodeValue(ox, l, s, h)
				b.DecodeValue(oy, l, s, h)
				for i := range ox {
					if ox[i] != oy[i] {
						t.Fatalf("%v: layer %d slot %d head %d value %v != %v", typ, l, s, h, ox, oy)
					}
				}
			}
		}
	}
}
