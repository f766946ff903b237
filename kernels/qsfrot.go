package kernels

import (
	"encoding/binary"
	"math"
)

// The AVX2 and NEON kernels of QSF's rotated table types (QSF_Q2R,
// QSF_Q3R, QSF_Q4R) compute quant's order (see the rot types' Dot): per
// 64-element block and 32-element half h, the products of the table
// values with the activation quants and the sub-blocks' multipliers
// 1+sc_k stay in int32 lanes, which are added up to the exact integer
// Iₕ; then one float32 step per half, accₕ += float32(d·dₐₕ)·float(Iₕ),
// each product and sum rounded (no fused multiply-add), the blocks in
// order, and acc₀+acc₁ at the end of the row.

// rotPrepBlock is the size of prepRot's form of one 64-element block of
// the Q8_0 activation, in the order of the AVX2 kernels' registers (the
// elements 0..15 and 32..47 in one, 16..31 and 48..63 in the other):
// the 64 quants' absolute values (32 and 32 bytes), the 64 quants, the two
// Q8_0 blocks' scales dₐ₀ and dₐ₁ as float32 four times each, then for
// QSF_Q2R the codes' mirror pattern, twice: bits 2k, 2k+1 of byte j are
// set when the quant of element 16k+j is negative.
const rotPrepBlock = 192

// prepRot writes, per 64 elements of the Q8_0 activation act, the
// rotPrepBlock form the rotated types' AVX2 kernels read instead of act.
func prepRot(buf, act []byte, cols int) []byte {
	nb := cols / 64
	need := nb * rotPrepBlock
	if cap(buf) < need {
		buf = make([]byte, need)
	}
	buf = buf[:need]
	for b := 0; b < nb; b++ {
		o := (*[rotPrepBlock]byte)(buf[b*rotPrepBlock:])
		a := (*[68]byte)(act[b*68:])
		for j := 0; j < 16; j++ {
			// The quants of elements j, 16+j, 32+j and 48+j.
			q0, q1, q2, q3 := a[2+j], a[18+j], a[36+j], a[52+j]
			o[j], o[16+j], o[32+j], o[48+j] = absByte(q0), absByte(q2), absByte(q1), absByte(q3)
			o[64+j], o[80+j], o[96+j], o[112+j] = q0, q2, q1, q3
			m := q0>>7*3 | q1>>7*12 | q2>>7*48 | q3>>7*192
			o[160+j], o[176+j] = m, m
		}
		d0 := math.Float32bits(f16le(a[0:]))
		d1 := math.Float32bits(f16le(a[34:]))
		for l := 0; l < 4; l++ {
			binary.LittleEndian.PutUint32(o[128+4*l:], d0)
			binary.LittleEndian.PutUint32(o[144+4*l:], d1)
		}
	}
	return buf
}

// absByte returns |q| of an int8 quant as a byte (128 for −128).
func absByte(q byte) byte {
	if int8(q) < 0 {
		return -q
	}
	return q
}

// rotMul holds, for each byte b of a rotated block's multipliers (sc), the
// int16 multipliers of its two sub-blocks as the kernels' VPMADDWD takes
// them: 1+(b&15) eight times, then 1+(b>>4) eight times.
var rotMul = func() (t [256][16]uint16) {
	for b := range t {
		for j := 0; j < 8; j++ {
			t[b][j] = uint16(b&15) + 1
			t[b][8+j] = uint16(b>>4) + 1
		}
	}
	return t
}()

// checkRot checks the lengths the rotated types' AVX2 kernels rely on:
// len(out) rows of rowBytes in w (rows are whole 64-element blocks, one
// after the other) and cols/64 blocks of prepRot's form in aux.
func checkRot(out []float32, w []byte, rowBytes, cols int, aux []byte) {
	_ = w[len(out)*rowBytes-1]
	_ = aux[cols/64*rotPrepBlock-1]
}
