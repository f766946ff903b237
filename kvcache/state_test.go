package kvcache

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/qsf-llm/qsf/quant"
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

// TestStateF16SavedLayout builds, by hand, the saved state of an F16 cache
// in the layout earlier builds wrote (which stored its keys head by head
// and its values transposed, and saved them as stored): keys of each
// layer head by head, a head's slots one after another, then values of
// each layer transposed, for each KV head and dimension its slots side by
// side. WriteTo must write exactly those bytes, and ReadFrom must read them
// back into the entries stored (capacities on and off a multiple of 32, a
// window that has evicted, a cache partly full).
func TestStateF16SavedLayout(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, tc := range []struct {
		capacity, steps int
		policy          Policy
	}{{37, 20, nil}, {32, 32, nil}, {37, 45, Window{}}, {5, 1, nil}} {
		sh := Shape{Layers: 2, Capacity: tc.capacity, KVHeads: 3, HeadDimK: 6, HeadDimV: 5}
		kd, vd := sh.KVHeads*sh.HeadDimK, sh.KVHeads*sh.HeadDimV
		a, _ := NewWith(sh, Options{Type: F16, Policy: tc.policy})
		keys := make([][][]uint16, sh.Layers) // layer, slot: the stored bits
		vals := make([][][]uint16, sh.Layers)
		for l := range sh.Layers {
			keys[l], vals[l] = make([][]uint16, sh.Capacity), make([][]uint16, sh.Capacity)
		}
		for pos := range tc.steps {
			for l := range sh.Layers {
				k, v := make([]float32, kd), make([]float32, vd)
				for i := range k {
					k[i] = float32(rng.NormFloat64())
				}
				for i := range v {
					v[i] = float32(rng.NormFloat64())
				}
				s, err := a.Slot(l)
				if err != nil {
					t.Fatal(err)
				}
				a.Store(l, s, k, v)
				keys[l][s], vals[l][s] = make([]uint16, kd), make([]uint16, vd)
				for i, x := range k {
					keys[l][s][i] = quant.FP32ToFP16(x)
				}
				for i, x := range v {
					vals[l][s][i] = quant.FP32ToFP16(x)
				}
				p := make([]float32, a.Used(l))
				for i := range p {
					p[i] = rng.Float32()
				}
				a.Observe(l, p)
			}
			if err := a.SetLen(pos + 1); err != nil {
				t.Fatal(err)
			}
		}
		n := a.Used(0)
		var old []byte
		u32 := func(x uint32) { old = binary.LittleEndian.AppendUint32(old, x) }
		u16 := func(x uint16) { old = binary.LittleEndian.AppendUint16(old, x) }
		for _, x := range []int{sh.Layers, sh.Capacity, sh.KVHeads, sh.HeadDimK, sh.HeadDimV, int(F16)} {
			u32(uint32(x))
		}
		old = binary.LittleEndian.AppendUint64(old, uint64(tc.steps))
		u32(uint32(n))
		for l := range sh.Layers {
			u32(uint32(a.Used(l)))
		}
		for l := range sh.Layers {
			for s := range n {
				u32(uint32(a.Position(l, s)))
			}
			for s := range n {
				u32(math.Float32bits(a.score[l*sh.Capacity+s]))
			}
		}
		for l := range sh.Layers {
			for h := range sh.KVHeads {
				for s := range n {
					for _, x := range keys[l][s][h*sh.HeadDimK : (h+1)*sh.HeadDimK] {
						u16(x)
					}
				}
			}
		}
		for l := range sh.Layers {
			for r := range vd { // row r: dimension r%HeadDimV of KV head r/HeadDimV
				for s := range n {
					u16(vals[l][s][r])
				}
			}
		}
		var buf bytes.Buffer
		if k, err := a.WriteTo(&buf); err != nil || k != int64(len(old)) || a.StateBytes() != int64(len(old)) {
			t.Fatalf("capacity %d, %d steps: WriteTo %d bytes (StateBytes %d), the old layout %d: %v", tc.capacity, tc.steps, k, a.StateBytes(), len(old), err)
		}
		if !bytes.Equal(buf.Bytes(), old) {
			i := 0
			for buf.Bytes()[i] == old[i] {
				i++
			}
			t.Fatalf("capacity %d, %d steps: WriteTo differs from the old layout at byte %d of %d", tc.capacity, tc.steps, i, len(old))
		}
		b, _ := NewWith(sh, Options{Type: F16, Policy: tc.policy})
		if k, err := b.ReadFrom(bytes.NewReader(old)); err != nil || k != int64(len(old)) {
			t.Fatalf("capacity %d, %d steps: ReadFrom of the old layout: %d bytes, %v", tc.capacity, tc.steps, k, err)
		}
		if b.Len() != tc.steps || b.Used(1) != n {
			t.Fatalf("capacity %d: read len %d, %d slots; want %d, %d", tc.capacity, b.Len(), b.Used(1), tc.steps, n)
		}
		for l := range sh.Layers {
			for s := range n {
				if b.Position(l, s) != a.Position(l, s) || b.score[l*sh.Capacity+s] != a.score[l*sh.Capacity+s] {
					t.Fatalf("capacity %d layer %d slot %d: position %d score %g, want %d %g", tc.capacity, l, s,
						b.Position(l, s), b.score[l*sh.Capacity+s], a.Position(l, s), a.score[l*sh.Capacity+s])
				}
				k, v := make([]float32, sh.HeadDimK), make([]float32, sh.HeadDimV)
				for h := range sh.KVHeads {
					b.DecodeKey(k, l, s, h)
					for i, x := range k {
						if w := quant.FP16ToFP32(keys[l][s][h*sh.HeadDimK+i]); x != w {
							t.Fatalf("capacity %d layer %d slot %d head %d: key %d = %g, want %g", tc.capacity, l, s, h, i, x, w)
						}
					}
					b.DecodeValue(v, l, s, h)
					for i, x := range v {
						if w := quant.FP16ToFP32(vals[l][s][h*sh.HeadDimV+i]); x != w {
							t.Fatalf("capacity %d layer %d slot %d head %d: value %d = %g, want %g", tc.capacity, l, s, h, i, x, w)
						}
					}
				}
			}
		}
	}
}
