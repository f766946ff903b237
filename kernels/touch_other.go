//go:build purego || !amd64

package kernels

// touch128 is Touch over a multiple of 128 bytes.
func touch128(b []byte) uint64 { return touchGeneric(b) }
