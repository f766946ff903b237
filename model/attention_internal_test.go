package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/qsf-llm/qsf/kernels"
	"github.com/qsf-llm/qsf/kvcache"
)

// TestAttendCodedMatchesHeads checks attendCoded, which decodes each
// cached key and value once for the query heads of its KV head (up to
// eight heads as the lanes of kernels.LanesDotSeq), against
// attendCodedHeads (head by head, straight from the codes) bit for bit,
// on the current tier: quantized caches of every type, query-head groups
// of 1, 3, 8 and 12 (more than one set of lanes), heads of 8 to 64
// elements (20: tails of the 8-wide kernels), odd head ranges, and slot
// counts in the first group, across groups and ending in the exact group
// still being written.
func TestAttendCodedMatchesHeads(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pool := kernels.NewPool(1)
	defer pool.Close()
	for _, typ := range []kvcache.Type{kvcache.Q8, kvcache.Q4, kvcache.Q2} {
		for _, shape := range []struct{ heads, kvHeads, hd int }{{4, 4, 64}, {6, 2, 16}, {16, 2, 32}, {8, 1, 8}, {24, 2, 20}} {
			m := &Model{Hparams: Hparams{Layers: 2, Embd: shape.heads * shape.hd, FFN: 8, Vocab: 4,
				Heads: shape.heads, KVHeads: shape.kvHeads, HeadDimK: shape.hd, HeadDimV: shape.hd, RopeDim: shape.hd}}
			hp := &m.Hparams
			s, err := m.NewStateWith(pool, StateOptions{Capacity: 80, KV: kvcache.Options{Type: typ}})
			if err != nil {
				t.Fatal(err)
			}
			k, v := make([]float32, hp.KDim()), make([]float32, hp.VDim())
			for pos := range 75 {
				if err := s.KV.SetLen(pos); err != nil {
					t.Fatal(err)
				}
				for l := range hp.Layers {
					for i := range k {
						k[i] = float32(rng.NormFloat64())
					}
					for i := range v {
						v[i] = float32(rng.NormFloat64())
					}
					slot, err := s.KV.Slot(l)
					if err != nil {
						t.Fatal(err)
					}
					s.KV.Store(l, slot, k, v)
				}
				if err := s.KV.SetLen(pos + 1); err != nil {
					t.Fatal(err)
				}
				if pos != 0 && pos != 5 && pos != 31 && pos != 40 && pos != 74 {
					continue
				}
				n := s.KV.Used(1)
				for i := range s.q {
					s.q[i] = float32(rng.NormFloat64())
				}
				for _, r := range [][2]int{{0, hp.Heads}, {1, hp.Heads - 1}, {hp.Heads / 2, hp.Heads}} {
					want, got := make([]float32, len(s.att)), make([]float32, len(s.att))
					s.attendCodedHeads(attnArgs{layer: 1, n: n, q: s.q, att: want}, r[0], r[1])
					wantScores := append([]float32(nil), s.scores...)
					clear(s.scores)
					s.attendCoded(attnArgs{layer: 1, n: n, q: s.q, att: got}, r[0], r[1])
					for i := range want {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%v %+v, %d slots, heads %v: output %d = %g, head by head %g", typ, shape, n, r, i, got[i], want[i])
						}
					}
					for i := r[0] * s.KV.Capacity(); i < r[1]*s.KV.Capacity(); i++ {
						if math.Float32bits(s.scores[i]) != math.Float32bits(wantScores[i]) {
							t.Fatalf("%v %+v, %d slots, heads %v: probability %d = %g, head by head %g", typ, shape, n, r, i, s.scores[i], wantScores[i])
						}
					}
				}
			}
		}
	}
}

// BenchmarkAttendCoded measures one token's attention over 110 slots of a
// q4 cache for tinyllama's heads (32 query heads, 4 KV heads of 64), the
// cache a tight RAM budget picks: attendCoded against attendCodedHeads.
func BenchmarkAttendCoded(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	pool := kernels.NewPool(1)
	defer pool.Close()
	m := &Model{Hparams: Hparams{Layers: 1, Embd: 2048, FFN: 8, Vocab: 4, Heads: 32, KVHeads: 4, HeadDimK: 64, HeadDimV: 64, RopeDim: 64}}
	s, err := m.NewStateWith(pool, StateOptions{Capacity: 128, KV: kvcache.Options{Type: kvcache.Q4}})
	if err != nil {
		b.Fatal(err)
	}
	fillCache(s, 110, rng)
	for i := range s.q {
		s.q[i] = float32(rng.NormFloat64())
	}
	a := attnArgs{layer: 0, n: s.KV.Used(0), q: s.q, att: s.att}
	b.Run("grouped", func(b *testing.B) {
		for range b.N {
			s.attendCoded(a, 0, m.Heads)
		}
	})
	b.Run("heads", func(b *testing.B) {
		for range b.N {
			s.attendCodedHeads(a, 0, m.Heads)
		}
	})
}

// BenchmarkAttendF32 measures one token's attention over 55 slots of an
// f32 cache (the default) for 12L-768's heads (12 heads of 64), hot in
// the cache: the compute of a decoding step's attention, per layer.
func BenchmarkAttendF32(b *testing.B) { benchAttendHot(b, kvcache.F32) }

// benchAttendHot measures one token's attention over 55 slots of a cache
// of type typ for 12L-768's heads, hot in the cache.
func benchAttendHot(b *testing.B, typ kvcache.Type) {
	rng := rand.New(rand.NewPCG(1, 2))
	pool := kernels.NewPool(1)
	defer pool.Close()
	m := &Model{Hparams: Hparams{Layers: 1, Embd: 768, FFN: 8, Vocab: 4, Heads: 12, KVHeads: 12, HeadDimK: 64, HeadDimV: 64, RopeDim: 64}}
	s, err := m.NewStateWith(pool, StateOptions{Capacity: 256, KV: kvcache.Options{Type: typ}})
	if err != nil {
		b.Fatal(err)
	}
	fillCache(s, 55, rng)
	for i := range s.q {
		s.q[i] = float32(rng.NormFloat64())
	}
	a := attnArgs{layer: 0, n: s.KV.Used(0), q: s.q, att: s.att}
	attend := attenderFor(typ)
	for range b.N {
		attend(s, a, 0, m.Heads)
	}
}

// TestAttendF32Tiers checks attendF32 (one token's attention over an f32
// cache) on every tier against the generic tier's, bit for bit: 12L-768's
// heads and grouped ones, head ranges as the threads split them, and slot
// counts below, at and past a lane round of 32.
func TestAttendF32Tiers(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, shape := range []struct{ heads, kvHeads, hd int }{{12, 12, 64}, {12, 4, 64}, {6, 2, 48}, {4, 4, 40}} {
		m := &Model{Hparams: Hparams{Layers: 1, Embd: shape.heads * shape.hd, FFN: 8, Vocab: 4,
			Heads: shape.heads, KVHeads: shape.kvHeads, HeadDimK: shape.hd, HeadDimV: shape.hd, RopeDim: shape.hd}}
		q := make([]float32, m.QDim())
		for _, n := range []int{1, 7, 32, 33, 55, 100} {
			for i := range q {
				q[i] = float32(rng.NormFloat64())
			}
			var want []float32
			for _, name := range kernels.Tiers() {
				tr, err := kernels.TierNamed(name)
				if err != nil {
					t.Fatal(err)
				}
				pool := kernels.NewPoolTier(tr, 1)
				s, err := m.NewStateWith(pool, StateOptions{Capacity: 128, KV: kvcache.Options{Type: kvcache.F32}})
				if err != nil {
					t.Fatal(err)
				}
				fillCache(s, n, rand.New(rand.NewPCG(uint64(n), 5))) // the same cache on every tier
				copy(s.q, q)
				a := attnArgs{layer: 0, n: s.KV.Used(0), q: s.q, att: s.att}
				split := shape.heads / 3
				s.attendF32(a, 0, split)
				s.attendF32(a, split, shape.heads)
				pool.Close()
				if want == nil {
					want = append([]float32(nil), s.att...)
					continue
				}
				for i := range want {
					if math.Float32bits(s.att[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s: %+v, %d slots: output %d = %g, want %g (%s)", name, shape, n, i, s.att[i], want[i], kernels.Tiers()[0])
					}
				}
			}
		}
	}
}

// BenchmarkAttendF16 is BenchmarkAttendF32 over an f16 cache (llama.cpp's
// default): one token's attention over 55 slots for 12L-768's heads, hot
// in the cache.
func BenchmarkAttendF16(b *testing.B) { benchAttendHot(b, kvcache.F16) }

// BenchmarkAttendCold measures the attention of one decoding step of four
// sessions on 12L-768 (12 layers, 12 heads of 64, 55 cached positions
// each), f32 against f16 cache, with the caches evicted from every CPU
// cache before each step (as a step's 68 MB of weights evict them in a
// server), so that the time is mostly waiting on memory: what an f16
// cache's half bytes save. Each op is 48 attentions (12 layers × 4).
func BenchmarkAttendCold(b *testing.B) {
	flush := make([]uint64, 96<<20/8) // more than the L3
	for _, typ := range []kvcache.Type{kvcache.F32, kvcache.F16} {
		b.Run(typ.String(), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			pool := kernels.NewPool(1)
			defer pool.Close()
			m := &Model{Hparams: Hparams{Layers: 12, Embd: 768, FFN: 8, Vocab: 4, Heads: 12, KVHeads: 12, HeadDimK: 64, HeadDimV: 64, RopeDim: 64}}
			var states []*State
			for range 4 {
				s, err := m.NewStateWith(pool, StateOptions{Capacity: 256, KV: kvcache.Options{Type: typ}})
				if err != nil {
					b.Fatal(err)
				}
				k, v := make([]float32, m.KDim()), make([]float32, m.VDim())
				for pos := range 55 {
					s.KV.SetLen(pos)
					for l := range m.Layers {
						for i := range k {
							k[i], v[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
						}
						slot, _ := s.KV.Slot(l)
						s.KV.Store(l, slot, k, v)
					}
				}
				s.KV.SetLen(55)
				for i := range s.q {
					s.q[i] = float32(rng.NormFloat64())
				}
				states = append(states, s)
			}
			attend := attenderFor(typ)
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				for j := range flush {
					flush[j] += uint64(i)
				}
				b.StartTimer()
				for l := range m.Layers {
					for _, s := range states {
						attend(s, attnArgs{layer: l, n: 55, q: s.q, att: s.att}, 0, m.Heads)
					}
				}
			}
		})
	}
}

// TestAttendF16Tiers checks attendF16 (one token's attention over an f16
// cache) on every tier, bit for bit, against llama.cpp's sums as the
// cache used to be read (attendF16Heads: head by head, DotF16Rows over the
// head's keys and DotF16RowsPadded over its values transposed, on the
// generic tier): 12L-768's heads, grouped ones and keys wider than values,
// head ranges as the threads split them, and slot counts below, at and
// past a lane round of 32. The rounded queries and probabilities, which
// Observe reads, must match too.
func TestAttendF16Tiers(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, shape := range []struct{ heads, kvHeads, hdk, hdv int }{{12, 12, 64, 64}, {12, 4, 64, 64}, {6, 2, 48, 48}, {4, 4, 40, 40}, {6, 3, 48, 32}} {
		m := &Model{Hparams: Hparams{Layers: 1, Embd: shape.heads * shape.hdk, FFN: 8, Vocab: 4,
			Heads: shape.heads, KVHeads: shape.kvHeads, HeadDimK: shape.hdk, HeadDimV: shape.hdv, RopeDim: shape.hdk}}
		q := make([]float32, m.QDim())
		for _, n := range []int{1, 7, 32, 33, 55, 100} {
			for i := range q {
				q[i] = float32(rng.NormFloat64())
			}
			wantQ, wantP, want := attendF16Heads(t, m, q, n)
			for _, name := range kernels.Tiers() {
				tr, err := kernels.TierNamed(name)
				if err != nil {
					t.Fatal(err)
				}
				pool := kernels.NewPoolTier(tr, 1)
				s, err := m.NewStateWith(pool, StateOptions{Capacity: 128, KV: kvcache.Options{Type: kvcache.F16}})
				if err != nil {
					t.Fatal(err)
				}
				fillCache(s, n, rand.New(rand.NewPCG(uint64(n), 5))) // the same cache on every tier
				copy(s.q, q)
				a := attnArgs{layer: 0, n: s.KV.Used(0), q: s.q, att: s.att}
				split := shape.heads / 3
				s.attendF16(a, 0, split)
				s.attendF16(a, split, shape.heads)
				pool.Close()
				for i := range want {
					if math.Float32bits(s.att[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s: %+v, %d slots: output %d = %g, want %g", name, shape, n, i, s.att[i], want[i])
					}
				}
				for i := range wantQ {
					if math.Float32bits(s.q[i]) != math.Float32bits(wantQ[i]) {
						t.Fatalf("%s: %+v, %d slots: rounded query %d = %g, want %g", name, shape, n, i, s.q[i], wantQ[i])
					}
				}
				for h := range shape.heads {
					p := s.scoresOf(a, h)
					for i := range p {
						if math.Float32bits(p[i]) != math.Float32bits(wantP[h*n+i]) {
							t.Fatalf("%s: %+v, %d slots: head %d probability %d = %g, want %g", name, shape, n, h, i, p[i], wantP[h*n+i])
						}
					}
				}
			}
		}
	}
}

// attendF16Heads computes the attention of query q over an f16 cache
// filled as TestAttendF16Tiers fills it, with n slots, head by head as
// llama.cpp lays out its cache: each head's scores DotF16Rows of the
// rounded query with its keys, and its output DotF16RowsPadded of the
// rounded probabilities with its values transposed (rows of n slots padded
// to a multiple of 32), on the generic tier. It returns the rounded query,
// the probabilities (n per head) and the output.
func attendF16Heads(t *testing.T, m *Model, q []float32, n int) (rq, p, out []float32) {
	t.Helper()
	g, err := kernels.TierNamed("generic")
	if err != nil {
		t.Fatal(err)
	}
	pool := kernels.NewPoolTier(g, 1)
	defer pool.Close()
	s, err := m.NewStateWith(pool, StateOptions{Capacity: 128, KV: kvcache.Options{Type: kvcache.F16}})
	if err != nil {
		t.Fatal(err)
	}
	fillCache(s, n, rand.New(rand.NewPCG(uint64(n), 5)))
	hp := &m.Hparams
	kd, vd, hdk, hdv := hp.KDim(), hp.VDim(), hp.HeadDimK, hp.HeadDimV
	keys, values := s.KV.KeysF16(0, n), s.KV.ValuesF16(0, n)
	stride := (n + 31) &^ 31
	vt := make([]uint16, vd*stride)
	for t := range n {
		for r := range vd {
			vt[r*stride+t] = values[t*vd+r]
		}
	}
	rq = append([]float32(nil), q...)
	g.RoundF16(rq)
	p, out = make([]float32, hp.Heads*n), make([]float32, hp.Heads*hdv)
	group := hp.Heads / hp.KVHeads
	for h := range hp.Heads {
		kvh := h / group
		sc := p[h*n : (h+1)*n]
		g.DotF16Rows(sc, keys[kvh*hdk:], kd, rq[h*hdk:(h+1)*hdk])
		softmaxScaled(g, sc, scoreScale(hp))
		g.RoundF16(sc)
		g.DotF16RowsPadded(out[h*hdv:(h+1)*hdv], vt[kvh*hdv*stride:], stride, sc)
	}
	return rq, p, out
}

// fillCache stores n positions of keys and values drawn from r (a key's
// element and the value's in turn, while both have one) in layer 0 of s's
// cache and sets its length to n.
func fillCache(s *State, n int, r *rand.Rand) {
	k, v := make([]float32, s.m.KDim()), make([]float32, s.m.VDim())
	for pos := range n {
		s.KV.SetLen(pos)
		for i := range max(len(k), len(v)) {
			if i < len(k) {
				k[i] = float32(r.NormFloat64())
			}
			if i < len(v) {
				v[i] = float32(r.NormFloat64())
			}
		}
		slot, _ := s.KV.Slot(0)
		s.KV.Store(0, slot, k, v)
	}
	s.KV.SetLen(n)
}
