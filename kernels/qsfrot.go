package kernels

import (
	"encoding/binary"
	"math"
)

// The assembly kernels of QSF's rotated table types (QSF_Q2R, QSF_Q3R,
// QSF_Q4R) compute quant's lane order (see the rot types' Dot): per
// 64-element block, eight int32 lanes per half, scaled by the activation
// blocks' scales, added, scaled by the block's d and accumulated.

// rotPrepBlock is the size of prepRot's form of one 64-element block of
// the Q8_0 activation: the 64 quants' absolute values, then the first
// activation block's scale dₐ₀ as float32 eight times, then dₐ₁ eight
// times.
const rotPrepBlock = 128

// prepRot writes, per 64 elements of the Q8_0 activation act, the
// rotPrepBlock form the rotated types' kernels read beside act itself.
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
		for j := 0; j < 32; j++ {
			o[j] = absByte(a[2+j])
			o[32+j] = absByte(a[36+j])
		}
		putScales(o[64:], a)
	}
	return buf
}

// putScales writes the scales of the two Q8_0 blocks a as float32, the
// first eight times, then the second eight times.
func putScales(o []byte, a *[68]byte) {
	d0 := math.Float32bits(f16le(a[0:]))
	d1 := math.Float32bits(f16le(a[34:]))
	for l := 0; l < 8; l++ {
		binary.LittleEndian.PutUint32(o[4*l:], d0)
		binary.LittleEndian.PutUint32(o[32+4*l:], d1)
	}
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

// checkRot checks the lengths the rotated types' assembly relies on:
// len(out) rows of rowBytes in w (rows are whole 64-element blocks, one
// after the other), cols/64 blocks of Q8_0 pairs in act and of prepRot's
// form in aux.
func checkRot(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	_ = w[len(out)*rowBytes-1]
	_ = act[cols/64*68-1]
	_ = aux[cols/64*rotPrepBlock-1]
}
