package kernels

import (
	"encoding/binary"
	"math"

	"github.com/qsf-llm/qsf/quant"
)

// Q6_KS is the element type of a Q6_K matrix that Repack has rearranged at
// load time for the generic tier's Q6_K kernel (a tier with a Q6_K kernel
// of its own keeps the file's layout: Tier.RepackType). It is never stored
// in a file. The kernels accept it like Q6_K, with Q8_K activations, and
// give the same results, bit for bit.
//
// The layout keeps the matrix's size (210 bytes per 256 weights) and its
// rows, a row's blocks in order; only the 192 bytes of quants of a block
// move (its 16 scales and its fp16 scale stay at 192 and 208). Each quant
// is whole, six bits, and four consecutive quants e..e+3 (a quad, whose
// products ggml's AVX2 order sums into one lane) sit at the same bits of
// the four 16-bit lanes of a word, so that one mask, or a shift and a
// mask, yields them as the operand of one 64-bit multiplication (see
// q6_KSSums). Group g (elements 32g..32g+31, quads 0..7, sub-blocks 2g and
// 2g+1) is three little-endian words at 24g: lane i of word 0 holds element
// i of quad 0 at bits 0–5, of quad 1 at bits 6–11 and the low four bits of
// quad 6's at bits 12–15; word 1 likewise quads 2, 3 and 7; word 2 quads 4
// and 5, the high two bits of quad 6's element i at bits 12–13 and of quad
// 7's at bits 14–15.
const Q6_KS = quant.Type(1<<16 | uint32(quant.Q6_K))

// q6_KSNative reports whether the Q6_KS layout pays off on a tier: only
// where its Q6_K kernel is the generic tier's (the other tiers' kernels
// read the file's layout).
func q6_KSNative(tr *Tier) bool {
	k := tr.row(quant.Q6_K)
	return k.rows == nil || k.rowsTier == genericTier.name
}

// q6_KQuant returns the quant (0..63) of element e of the Q6_K block b.
func q6_KQuant(b []byte, e int) byte {
	h, c, l := e/128, e%128/32, e%32
	v := b[64*h+32*(c&1)+l] >> (4 * (c >> 1)) & 0xF
	return v | (b[128+32*h+l]>>(2*c)&3)<<4
}

// packQ6_KSBlock writes block b of the Q6_K row grp in the Q6_KS layout.
func packQ6_KSBlock(o, grp []byte, _, b int) {
	blk := grp[210*b : 210*b+210]
	var w [24]uint64
	for g := 0; g < 8; g++ {
		for i := 0; i < 4; i++ {
			q := func(quad int) uint64 { return uint64(q6_KQuant(blk, 32*g+4*quad+i)) }
			sh := 16 * i
			w[3*g] |= (q(0) | q(1)<<6 | (q(6)&0xF)<<12) << sh
			w[3*g+1] |= (q(2) | q(3)<<6 | (q(7)&0xF)<<12) << sh
			w[3*g+2] |= (q(4) | q(5)<<6 | q(6)>>4<<12 | q(7)>>4<<14) << sh
		}
	}
	for k, v := range w {
		binary.LittleEndian.PutUint64(o[8*k:], v)
	}
	copy(o[192:210], blk[192:210])
}

// q6_KSPrepBlock is the number of uint64 words per block of the generic
// Q6_KS kernel's prepared Q8_K activation: per quad (four elements
// y₀..y₃ from 4k, k = 0..63) the multiplier U = y₃ + y₂·2¹⁶ + y₁·2³² +
// y₀·2⁴⁸ (modulo 2⁶⁴) and the read offset K = 2⁴⁷ − 32·(y₀+…+y₃)·2⁴⁸;
// then the block's float32 scale.
const q6_KSPrepBlock = 64*2 + 1

// prepQ6_KS builds the generic Q6_KS kernel's prepared activation.
func prepQ6_KS(buf, act []byte, cols int) []byte {
	nb := cols / 256
	need := nb * q6_KSPrepBlock * 8
	if cap(buf) < need {
		buf = make([]byte, need)
	}
	buf = buf[:need]
	u := words(buf)
	for b := 0; b < nb; b++ {
		a := (*[292]byte)(act[292*b:])
		o := (*[q6_KSPrepBlock]uint64)(u[q6_KSPrepBlock*b:])
		for k := 0; k < 64; k++ {
			var m, s int64
			for i := 0; i < 4; i++ {
				y := int64(int8(a[4+4*k+i]))
				m += y << (16 * (3 - i))
				s += y
			}
			o[2*k] = uint64(m)
			o[2*k+1] = uint64(1<<47 - 32*s<<48)
		}
		o[128] = uint64(binary.LittleEndian.Uint32(a[:4]))
	}
	return buf
}

// q6_KSSums returns the integer lane sums of the Q6_KS block b with the
// prepared activation block p: S_l (ggml's AVX2 lane l, the sum
// over the groups g of scale(2g + l/4) times quad l's Σ(q−32)·y) in the
// low 32 bits of s_l and S_{l+4} in its high 32 bits, modulo 2⁶⁴
// (|S| < 2²⁵, so both read back exactly: q6_KSLanes).
//
// A quad's operand X (its four quants, unsigned, in the 16-bit lanes of a
// word) times its multiplier U has Σq·y in lane 3 (bits 48–63), and in
// the lanes below partial sums of at most three products q·y,
// |·| ≤ 3·63·128 < 2¹⁵, so below 2⁴⁷ in all. Adding K rounds them away and
// subtracts 32·Σy in lane 3, whose value Σ(q−32)·y lies in
// [−16256, 16384]: the arithmetic shift of X·U + K by 48 reads it
// exactly. It is a function of its own with the accumulators in memory
// (one read-modify-write instruction each), so that the masks, scales
// and pointers stay in registers.
//
//go:noinline
func q6_KSSums(sum *[4]uint64, b *[210]byte, p *[q6_KSPrepBlock]uint64) {
	*sum = [4]uint64{}
	for g := 0; g < 8; g++ {
		const m6, m4, m3 = 0x003F003F003F003F, 0x000F000F000F000F, 0x0030003000300030
		w := (*[24]byte)(b[24*g:])
		u := (*[16]uint64)(p[16*g:])
		sa := uint64(int64(int8(b[192+2*g])))
		v := binary.LittleEndian.Uint64(w[0:])
		sum[0] += uint64(int64(v&m6*u[0]+u[1])>>48) * sa
		sum[1] += uint64(int64(v>>6&m6*u[2]+u[3])>>48) * sa
		v = binary.LittleEndian.Uint64(w[8:])
		sum[2] += uint64(int64(v&m6*u[4]+u[5])>>48) * sa
		sum[3] += uint64(int64(v>>6&m6*u[6]+u[7])>>48) * sa
		sb := uint64(int64(int8(b[193+2*g]))) << 32
		v = binary.LittleEndian.Uint64(w[16:])
		sum[0] += uint64(int64(v&m6*u[8]+u[9])>>48) * sb
		sum[1] += uint64(int64(v>>6&m6*u[10]+u[11])>>48) * sb
		v = binary.LittleEndian.Uint64(w[16:])>>8&m3 | binary.LittleEndian.Uint64(w[0:])>>12&m4
		sum[2] += uint64(int64(v*u[12]+u[13])>>48) * sb
		v = binary.LittleEndian.Uint64(w[16:])>>10&m3 | binary.LittleEndian.Uint64(w[8:])>>12&m4
		sum[3] += uint64(int64(v*u[14]+u[15])>>48) * sb
	}
}

// q6_KSLanes returns the lane sums S_l and S_{l+4} that q6_KSSums packed
// into s.
func q6_KSLanes(s uint64) (lo, hi int32) {
	lo = int32(s)
	return lo, int32(int64(s-uint64(int64(lo))) >> 32)
}

// q6_KSRows is the generic tier's Q6_KS kernel (quant's Q6_K dot product
// on the Q6_KS layout); aux is prepQ6_KS's.
func q6_KSRows(out []float32, w []byte, rowBytes, cols int, _, aux []byte) {
	nb := cols / 256
	u := words(aux)[:nb*q6_KSPrepBlock]
	fp16 := fp16Floats()
	for r := range out {
		row := w[r*rowBytes:][:210*nb]
		var acc [8]float32
		for i := 0; i < nb; i++ {
			bl := (*[210]byte)(row[210*i:])
			p := (*[q6_KSPrepBlock]uint64)(u[q6_KSPrepBlock*i:])
			var sum [4]uint64
			q6_KSSums(&sum, bl, p)
			var s [8]int32
			for l := 0; l < 4; l++ {
				s[l], s[l+4] = q6_KSLanes(sum[l])
			}
			d := math.Float32frombits(uint32(p[128])) * fp16[binary.LittleEndian.Uint16(bl[208:])]
			for k := range acc {
				if v, ok := fma32Try(d, float32(s[k]), acc[k]); ok {
					acc[k] = v
				} else {
					acc[k] = fma32Rare(d, float32(s[k]), acc[k])
				}
			}
		}
		r0, r1, r2, r3 := acc[4]+acc[0], acc[5]+acc[1], acc[6]+acc[2], acc[7]+acc[3]
		out[r] = (r0 + r2) + (r1 + r3)
	}
}
