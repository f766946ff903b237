package kernels

import "math"

// ArgmaxF32 returns the index of the largest value of x, the lowest one
// on a tie (-0 and +0 are equal), or -1 for an empty x. NaNs are passed
// over, except that a NaN at index 0 is the answer: the result of the
// plain loop that keeps the first index whose value is above the best
// so far, starting from x[0]. It is a greedy sampler's pick, serial work
// between two batched decoding steps, once per sequence.
func ArgmaxF32(x []float32) int { return current.Load().ArgmaxF32(x) }

// ArgmaxF32 is the package function ArgmaxF32 on tier tr.
func (tr *Tier) ArgmaxF32(x []float32) int {
	if len(x) == 0 {
		return -1
	}
	if x[0] != x[0] {
		return 0 // nothing is above a NaN
	}
	if tr != genericTier {
		if i, ok := argmaxAsm(x); ok {
			return i
		}
	}
	return argmaxLanes(x)
}

// argmaxLanes is ArgmaxF32 for x[0] not NaN. It keeps eight running
// maxima, of the positions i ≡ k (mod 8), each the first of its largest,
// and then takes the first of the largest of them: the same index as the
// plain loop, in about half its time over a vocabulary's logits.
func argmaxLanes(x []float32) int {
	// The lanes start at -Inf with no index: a lane takes only values
	// above it, and NaNs never are.
	inf := float32(math.Inf(-1))
	m0, m1, m2, m3, m4, m5, m6, m7 := inf, inf, inf, inf, inf, inf, inf, inf
	i0, i1, i2, i3, i4, i5, i6, i7 := -1, -1, -1, -1, -1, -1, -1, -1
	i := 0
	for ; i+8 <= len(x); i += 8 {
		v := x[i : i+8 : i+8]
		if v[0] > m0 {
			m0, i0 = v[0], i
		}
		if v[1] > m1 {
			m1, i1 = v[1], i+1
		}
		if v[2] > m2 {
			m2, i2 = v[2], i+2
		}
		if v[3] > m3 {
			m3, i3 = v[3], i+3
		}
		if v[4] > m4 {
			m4, i4 = v[4], i+4
		}
		if v[5] > m5 {
			m5, i5 = v[5], i+5
		}
		if v[6] > m6 {
			m6, i6 = v[6], i+6
		}
		if v[7] > m7 {
			m7, i7 = v[7], i+7
		}
	}
	best, bv := 0, x[0]
	for _, l := range [...]struct {
		m float32
		i int
	}{{m0, i0}, {m1, i1}, {m2, i2}, {m3, i3}, {m4, i4}, {m5, i5}, {m6, i6}, {m7, i7}} {
		if l.i >= 0 && (l.m > bv || l.m == bv && l.i < best) {
			best, bv = l.i, l.m
		}
	}
	for ; i < len(x); i++ {
		if x[i] > bv {
			best, bv = i, x[i]
		}
	}
	return best
}
