//go:build amd64 && !purego

package kernels

// touch128 is Touch over a multiple of 128 bytes: AVX2 loads when the
// machine has them.
func touch128(b []byte) uint64 {
	if !haveAVX2 {
		return touchGeneric(b)
	}
	return touchAVX2(&b[0], len(b)/128)
}

//go:noescape
func touchAVX2(p *byte, blocks int) uint64
