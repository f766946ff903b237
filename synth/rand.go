package synth

import "math/rand/v2"

// The weights come from splitmix64 streams, one per tensor row, so rows can
// be generated in any order and on any number of goroutines with the same
// result. Normal deviates are math/rand/v2's ziggurat (NormFloat64) over
// that stream; its output for a given source is pinned by the standard
// library's regression tests.

const golden = 0x9e3779b97f4a7c15

// mix64 is splitmix64's output function.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// hashName is FNV-1a of a tensor name.
func hashName(s string) uint64 {
	h := uint64(0xcbf29ce484222325)
	for i := range len(s) {
		h ^= uint64(s[i])
		h *= 0x100000001b3
	}
	return h
}

// rowRNG returns the generator for one row of one tensor.
func rowRNG(seed uint64, tensor uint64, row int) rng {
	return rng{state: mix64(mix64(seed^tensor) + uint64(row)*golden)}
}

// rng is a splitmix64 generator; it is a rand.Source.
type rng struct{ state uint64 }

func (r *rng) next() uint64 {
	r.state += golden
	return mix64(r.state)
}

// Uint64 implements rand.Source.
func (r *rng) Uint64() uint64 { return r.next() }

// normals fills dst with normal deviates of standard deviation std.
func (r *rng) normals(dst []float32, std float64) {
	g := rand.New(r)
	for i := range dst {
		dst[i] = float32(g.NormFloat64() * std)
	}
}
