package kernels

import "encoding/binary"

// Touch reads every byte of b and returns a checksum of it (the wrapping
// sum of its little-endian 64-bit words, tail bytes added one by one), so
// that no read can be elided. It uses the widest loads the machine has and
// does nothing else, which makes it the yardstick of memory read bandwidth:
// `qsf bench --membw` times it over a buffer larger than every cache, and a
// mat-vec kernel that streams weights at that speed is bandwidth-bound.
func Touch(b []byte) uint64 {
	var s uint64
	n := len(b) &^ 127
	if n > 0 {
		s = touch128(b[:n])
	}
	for i := n; i+8 <= len(b); i += 8 {
		s += binary.LittleEndian.Uint64(b[i:])
	}
	for i := len(b) &^ 7; i < len(b); i++ {
		s += uint64(b[i])
	}
	return s
}

// touchGeneric is touch128 in Go: len(b) is a multiple of 128.
func touchGeneric(b []byte) uint64 {
	var a0, a1, a2, a3 uint64
	for i := 0; i < len(b); i += 32 {
		w := b[i : i+32 : i+32]
		a0 += binary.LittleEndian.Uint64(w[0:])
		a1 += binary.LittleEndian.Uint64(w[8:])
		a2 += binary.LittleEndian.Uint64(w[16:])
		a3 += binary.LittleEndian.Uint64(w[24:])
	}
	return a0 + a1 + a2 + a3
}
