package synth

import "math"

// The weights come from splitmix64 streams, one per tensor row, so rows can
// be generated in any order and on any number of goroutines with the same
// result. Normal deviates use Marsaglia's polar method.

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

// rng is a splitmix64 generator.
type rng struct{ state uint64 }

func (r *rng) next() uint64 {
	r.state += golden
	return mix64(r.state)
}

// signed returns a uniform float64 in (-1, 1).
func (r *rng) signed() float64 {
	return float64(int64(r.next())>>10) * (1.0 / (1 << 53))
}

// normals fills dst with normal deviates of standard deviation std.
func (r *rng) normals(dst []float32, std float64) {
	for i := 0; i < len(dst); {
		u, v := r.signed(), r.signed()
		s := u*u + v*v
		if s >= 1 || s == 0 {
			continue
		}
		f := std * math.Sqrt(-2*math.Log(s)/s)
		dst[i] = float32(u * f)
		i++
		if i < len(dst) {
			dst[i] = float32(v * f)
			i++
		}
	}
}
