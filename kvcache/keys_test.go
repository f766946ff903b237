package kvcache

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestQuantizedKeys stores keys with an outlier channel (a large offset,
// as rotary key channels have) and checks every element read back through
// DecodeKey against the per-channel quantization bound: half a step of the
// channel's range, exact for the group being written.
func TestQuantizedKeys(t *testing.T) {
	for _, typ := range []Type{Q8, Q4, Q2} {
		for _, tc := range []struct {
			name   string
			policy Policy
			n      int // positions written
			slack  float64
		}{
			{"none", nil, 100, 0.5},
			{"window", Window{}, 250, 0.5},
			// Heavy-hitter victims are scattered, so a block may be
			// quantized again after one of its slots is replaced.
			{"h2o", HeavyHitter{Recent: 20}, 250, 2},
		} {
			t.Run(fmt.Sprintf("%v/%s", typ, tc.name), func(t *testing.T) {
				testQuantizedKeys(t, typ, tc.policy, tc.n, tc.slack)
			})
		}
	}
}

func testQuantizedKeys(t *testing.T, typ Type, policy Policy, n int, slack float64) {
	sh := Shape{Layers: 2, Capacity: 100, KVHeads: 2, HeadDimK: 6, HeadDimV: 4}
	c, err := NewWith(sh, Options{Type: typ, Policy: policy})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	kd := sh.KVHeads * sh.HeadDimK
	keys := make([][]float32, n) // by position
	var lo, hi [12]float32
	for ch := range kd {
		lo[ch], hi[ch] = float32(math.Inf(1)), float32(math.Inf(-1))
	}
	v := make([]float32, sh.KVHeads*sh.HeadDimV)
	for p := range n {
		k := make([]float32, kd)
		for ch := range k {
			k[ch] = float32(rng.NormFloat64())
			if ch%sh.HeadDimK == 5 {
				k[ch] = 20 + 2*k[ch]
			}
			lo[ch], hi[ch] = min(lo[ch], k[ch]), max(hi[ch], k[ch])
		}
		keys[p] = k
		for l := range sh.Layers {
			s, err := c.Slot(l)
			if err != nil {
				t.Fatal(err)
			}
			c.Store(l, s, k, v)
			if policy != nil && policy.Tracks() {
				p := make([]float32, c.Used(l))
				for i := range p {
					p[i] = rng.Float32()
				}
				c.Observe(l, p)
			}
		}
		if err := c.SetLen(p + 1); err != nil {
			t.Fatal(err)
		}
	}
	k := make([]float32, sh.HeadDimK)
	levels := float64(typ.levels())
	for l := range sh.Layers {
		staged := int(c.stageBlk[l])
		for s := range c.Used(l) {
			p := c.Position(l, s)
			for h := range sh.KVHeads {
				c.DecodeKey(k, l, s, h)
				for i := range sh.HeadDimK {
					ch := h*sh.HeadDimK + i
					got, want := k[i], keys[p][ch]
					tol := slack*float64(hi[ch]-lo[ch])/levels + 1e-5
					if s/KeyGroup == staged && p == n-1 {
						tol = 0 // the last key written is exact
					}
					if e := math.Abs(float64(got - want)); e > tol {
						t.Fatalf("layer %d slot %d (position %d) channel %d: got %v, want %v (error %g > %g)", l, s, p, ch, got, want, e, tol)
					}
				}
			}
		}
	}
	c.Reset()
	if c.Used(0) != 0 || c.stageBlk[0] != -1 {
		t.Fatal("Reset left entries")
	}
}
