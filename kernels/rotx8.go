package kernels

import (
	"encoding/binary"
	"math"

	"github.com/qsf-llm/qsf/quant"
)

// QSF_Q2Rx8, QSF_Q3Rx8 and QSF_Q4Rx8 are the element types of QSF_Q2R,
// QSF_Q3R and QSF_Q4R matrices that Repack has rearranged at load time,
// as Q4_0x8 is for Q4_0: never stored in a file, accepted by the MatVec
// and MatMul functions with (rotated) Q8_0 activations for matrices of a
// multiple of 8 rows, with the results of the matrix they were packed from
// bit for bit (quant's order for the rotated types).
//
// Groups of 8 rows stay in order and keep their size (20, 28 or 36 bytes
// per 64 weights). Within a group, block b (columns 64b..64b+63 of the
// eight rows) is 8·B bytes at 8·B·b (B the file's block bytes): the eight
// rows' fp16 d, then their multipliers (the file's two bytes per row),
// then the codes. A code "unit" u (u = 0..7) is the 64 codes of elements
// 4u..4u+3 and 32+4u..32+4u+3 of the eight rows, byte lane 4(2r+h)+i
// holding the code of row r, element 32h+4u+i: units 0..3 are sub-block
// 2h of lane (r, h), units 4..7 sub-block 2h+1. QSF_Q4Rx8 stores unit 2p in
// the low nibbles and unit 2p+1 in the high nibbles of 64-byte chunk p;
// QSF_Q2Rx8 unit 4p+s in bits 2s, 2s+1 of chunk p (two chunks); QSF_Q3Rx8
// units 2p and 2p+1 in bits 0..2 and 3..5 of chunk p (three chunks), and
// units 6 and 7 in bits 6, 7 of chunks 0 and 1 (the code's low bits) and
// bits 6 and 7 of chunk 2 (its high bit). Each code is then the low bits
// of its byte shifted right by at most one instruction.
//
// One load then holds, for each of the sixteen lanes 2r+h (row r, half
// h) of a 512-bit register, four elements of quant's integer sum Iₕ, so
// that the AVX-512 kernel adds the units of a sub-block in integer lanes
// and takes one float step per block for all eight rows and both halves,
// with no horizontal step, and converts the eight d's and multipliers
// with one instruction each.
const (
	QSF_Q2Rx8 = quant.Type(1<<16 | uint32(quant.QSF_Q2R))
	QSF_Q3Rx8 = quant.Type(1<<16 | uint32(quant.QSF_Q3R))
	QSF_Q4Rx8 = quant.Type(1<<16 | uint32(quant.QSF_Q4R))
)

// rotX8Bits returns the code bits of a rotated type or its x8 form.
func rotX8Bits(t quant.Type) int {
	switch t {
	case quant.QSF_Q2R, QSF_Q2Rx8:
		return 2
	case quant.QSF_Q3R, QSF_Q3Rx8:
		return 3
	}
	return 4
}

// packRotX8Block returns the function writing block b of a group of 8
// rows of a rotated type with bits-bit codes in the x8 layout. It works
// on the four codes of a lane's dword at once (one byte each).
func packRotX8Block(bits int) func(o, grp []byte, rb, b int) {
	if bits == 4 {
		return packQ4RX8Block
	}
	bb := 4 + 8*bits
	return func(o, grp []byte, rb, b int) {
		o = o[:8*bb]
		codes := o[32:]
		for r := 0; r < 8; r++ {
			blk := grp[r*rb+bb*b:][:bb]
			o[2*r], o[2*r+1], o[16+2*r], o[17+2*r] = blk[0], blk[1], blk[2], blk[3]
			for h := 0; h < 2; h++ {
				lane := 4 * (2*r + h)
				switch bits {
				case 2:
					// Element 16s+j is bits 2s, 2s+1 of byte j; unit
					// 4p+t is s = 2h+p, j = 4t+i.
					for p := 0; p < 2; p++ {
						sh := 2 * (2*h + p)
						var c uint32
						for t := 0; t < 4; t++ {
							c |= binary.LittleEndian.Uint32(blk[4+4*t:]) >> sh & 0x03030303 << (2 * t)
						}
						binary.LittleEndian.PutUint32(codes[64*p+lane:], c)
					}
				default:
					var q [8]uint32 // the codes of units 0..7, a byte per i
					for u := range q {
						// Element e = 32h+4u+i: low bits in byte
						// 4(u%4)+i at 2(2h+u/4), high bit at bit
						// 4(u%2)+i of byte 20+4h+u/2.
						lo := binary.LittleEndian.Uint32(blk[4+4*(u%4):]) >> (2 * (2*h + u/4)) & 0x03030303
						n := blk[20+4*h+u/2] >> (4 * (u % 2)) & 15
						q[u] = lo | spreadBits4[n]<<2
					}
					binary.LittleEndian.PutUint32(codes[lane:], q[0]|q[1]<<3|q[6]&0x03030303<<6)
					binary.LittleEndian.PutUint32(codes[64+lane:], q[2]|q[3]<<3|q[7]&0x03030303<<6)
					binary.LittleEndian.PutUint32(codes[128+lane:], q[4]|q[5]<<3|q[6]>>2&0x01010101<<6|q[7]>>2&0x01010101<<7)
				}
			}
		}
	}
}

// packQ4RX8Block is packRotX8Block(4) for QSF_Q4R, which a resident
// model repacks at load: a qword of a row's codes (bytes 8p..8p+7, units
// 2p and 2p+1 in the low and high nibbles) makes the two lanes of the row
// in codes chunk p at once (h = 0 the low nibbles, h = 1 the high).
func packQ4RX8Block(o, grp []byte, rb, b int) {
	const bb = 36
	le := binary.LittleEndian
	o = o[:8*bb]
	codes := o[32:]
	for r := 0; r < 8; r++ {
		blk := (*[bb]byte)(grp[r*rb+bb*b:])
		o[2*r], o[2*r+1], o[16+2*r], o[17+2*r] = blk[0], blk[1], blk[2], blk[3]
		for p := 0; p < 4; p++ {
			q := le.Uint64(blk[4+8*p:])
			lo, hi := uint32(q), uint32(q>>32)
			c0 := lo&0x0f0f0f0f | hi&0x0f0f0f0f<<4
			c1 := lo>>4&0x0f0f0f0f | hi&0xf0f0f0f0
			le.PutUint64(codes[64*p+8*r:], uint64(c0)|uint64(c1)<<32)
		}
	}
}

// spreadBits4[n] has bit i of n in byte i.
var spreadBits4 = func() (t [16]uint32) {
	for n := range t {
		for i := 0; i < 4; i++ {
			t[n] |= uint32(n>>i&1) << (8 * i)
		}
	}
	return t
}()

// rotX8Code returns the code of lane (byte) lane of unit u in a block of
// the x8 layout whose codes start at c.
func rotX8Code(c []byte, bits, u, lane int) uint8 {
	switch bits {
	case 4:
		return c[64*(u/2)+lane] >> (4 * (u % 2)) & 15
	case 3:
		switch u {
		case 6:
			return c[lane]>>6 | c[128+lane]>>6&1<<2
		case 7:
			return c[64+lane]>>6 | c[128+lane]>>7<<2
		}
		return c[64*(u/2)+lane] >> (3 * (u % 2)) & 7
	}
	return c[64*(u/4)+lane] >> (2 * (u % 4)) & 3
}

// rotX8Generic is the portable kernel of the x8 layouts, in quant's
// order: for each row and half h, Iₕ = m₂ₕ·S₂ₕ + m₂ₕ₊₁·S₂ₕ₊₁, S_k the
// integer dot product of sub-block k's codes' table values (units 4(k%2)
// to 4(k%2)+3) with the activation's quants, accₕ += float32(d·daₕ)·
// float32(Iₕ), then acc₀+acc₁. len(out) is a multiple of 8.
func rotX8Generic(t quant.Type) rowsFunc {
	bits := rotX8Bits(t)
	bb := 4 + 8*bits
	var tab [16]int32
	for i, v := range quant.Table(quant.Type(uint32(t) & 0xffff)) {
		tab[i] = int32(v)
	}
	return func(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
		nb := cols / 64
		act = act[:68*nb]
		for g := 0; g < len(out)/8; g++ {
			grp := w[g*8*rowBytes:][:8*bb*nb]
			var acc [8][2]float32
			for b := 0; b < nb; b++ {
				o := grp[8*bb*b:][:8*bb]
				for r := 0; r < 8; r++ {
					d := quant.FP16ToFP32(binary.LittleEndian.Uint16(o[2*r:]))
					for h := 0; h < 2; h++ {
						y := act[68*b+34*h:][:34]
						dh := float32(d * quant.FP16ToFP32(binary.LittleEndian.Uint16(y)))
						sc := o[16+2*r+h]
						var s [2]int32
						for u := 0; u < 8; u++ {
							for i := 0; i < 4; i++ {
								s[u/4] += tab[rotX8Code(o[32:], bits, u, 4*(2*r+h)+i)] * int32(int8(y[2+4*u+i]))
							}
						}
						m0, m1 := int32(sc&15)+1, int32(sc>>4)+1
						acc[r][h] += float32(dh * float32(m0*s[0]+m1*s[1]))
					}
				}
			}
			for r := range acc {
				out[8*g+r] = acc[r][0] + acc[r][1]
			}
		}
	}
}

// rotX8PrepBlock is the size of prepRotX8's form of one 64-element block
// of the Q8_0 activation: per unit u the 8 bytes of quants of elements
// 4u..4u+3 and 32+4u..32+4u+3 (lanes 2r and 2r+1 of the kernels'
// registers, which broadcast them), then per sub-block half s (units 4s
// to 4s+3) the two int32 −128·(sum of the 16 quants of elements 16s..16s+15
// and 32+16s..32+16s+15), then da₀ and da₁ as float32.
const rotX8PrepBlock = 8*8 + 2*8 + 8

// prepRotX8 writes the rotX8PrepBlock form of the Q8_0 activation act.
func prepRotX8(buf, act []byte, cols int) []byte {
	nb := cols / 64
	need := nb * rotX8PrepBlock
	if cap(buf) < need {
		buf = make([]byte, need)
	}
	buf = buf[:need]
	le := binary.LittleEndian
	for b := 0; b < nb; b++ {
		o := (*[rotX8PrepBlock]byte)(buf[b*rotX8PrepBlock:])
		a := (*[68]byte)(act[b*68:])
		var sum [2][2]int32
		for u := 0; u < 8; u++ {
			for h := 0; h < 2; h++ {
				q := le.Uint32(a[2+34*h+4*u:])
				sum[u/4][h] += int32(int8(q)) + int32(int8(q>>8)) + int32(int8(q>>16)) + int32(int8(q>>24))
				le.PutUint32(o[8*u+4*h:], q)
			}
		}
		for s := range sum {
			le.PutUint32(o[64+8*s:], uint32(-128*sum[s][0]))
			le.PutUint32(o[68+8*s:], uint32(-128*sum[s][1]))
		}
		le.PutUint32(o[80:], math.Float32bits(f16le(a[0:])))
		le.PutUint32(o[84:], math.Float32bits(f16le(a[34:])))
	}
	return buf
}
