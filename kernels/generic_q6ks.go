package kernels

import (
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/qsf-llm/qsf/quant"
)

// Q6_KS is the element type of a Q6_K matrix that Repack has rearranged at
// load time for the generic tier's Q6_K kernel (a tier with a Q6_K kernel
// of its own keeps the file's layout: Tier.RepackType). It is never stored
// in a file. The kernels accept it like Q6_K, with Q8_K activations, and
// give the same results, bit for bit.
//
// The layout keeps the matrix's size (210 bytes per 256 weights) and its
// rows, a row's blocks in order, and a block's fp16 scale at 208; its
// quants and its 16 scales move. Each quant
// is whole, six bits, and four consecutive quants e..e+3 (a quad, whose
// products ggml's AVX2 order sums into one lane) sit at the same bits of
// the four 16-bit lanes of a word, so that one mask, or a shift and a
// mask, yields them as the operand of one 64-bit multiplication (see
// q6_KSRow). Group g (elements 32g..32g+31, quads 0..7, sub-blocks 2g and
// 2g+1) is 26 bytes at 26g: three little-endian words, then the scales
// of sub-blocks 2g and 2g+1 (so that one pointer walks a block). Lane i of word 0 holds element
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

// packQ6_KSBlock writes block b of the Q6_K row grp in the Q6_KS layout.
func packQ6_KSBlock(o, grp []byte, _, b int) {
	blk := (*[210]byte)(grp[210*b:])
	// The quants in element order: half h's bytes l of ql (low nibbles
	// ranges 0 and 1, high nibbles 2 and 3) and of qh (two bits per
	// range).
	var q [256]uint64
	for h := 0; h < 2; h++ {
		for l := 0; l < 32; l++ {
			a, c, hb := uint64(blk[64*h+l]), uint64(blk[64*h+32+l]), uint64(blk[128+32*h+l])
			e := q[128*h+l:]
			e[0], e[32] = a&0xF|hb&3<<4, c&0xF|hb>>2&3<<4
			e[64], e[96] = a>>4|hb>>4&3<<4, c>>4|hb>>6<<4
		}
	}
	for g := 0; g < 8; g++ {
		x := (*[32]uint64)(q[32*g:])
		var w0, w1, w2 uint64
		for i := 0; i < 4; i++ {
			quad := func(k int) uint64 { return x[4*k+i] }
			sh := 16 * i
			w0 |= (quad(0) | quad(1)<<6 | quad(6)&0xF<<12) << sh
			w1 |= (quad(2) | quad(3)<<6 | quad(7)&0xF<<12) << sh
			w2 |= (quad(4) | quad(5)<<6 | quad(6)>>4<<12 | quad(7)>>4<<14) << sh
		}
		og := (*[26]byte)(o[26*g:])
		binary.LittleEndian.PutUint64(og[0:], w0)
		binary.LittleEndian.PutUint64(og[8:], w1)
		binary.LittleEndian.PutUint64(og[16:], w2)
		og[24], og[25] = blk[192+2*g], blk[193+2*g]
	}
	o[208], o[209] = blk[208], blk[209]
}

// q6_KSPrepBlock is the number of uint64 words per block of the generic
// Q6_KS kernel's prepared Q8_K activation: per group of 32 elements
// (q6_KSPrepGroup), for each of its quads (four elements y₀..y₃) the
// multiplier U = y₃ + y₂·2¹⁶ + y₁·2³² + y₀·2⁴⁸ (modulo 2⁶⁴) and the read
// offset K = 2⁴⁷ − 32·(y₀+…+y₃)·2⁴⁸, then the masks; after the groups the
// block's float32 scale.
const q6_KSPrepBlock = 8*q6_KSPrepGroup + 1

// q6_KSPrepGroup is the number of words of a group of 32 elements in the
// prepared activation: U and K of its eight quads, then q6_KSMasks.
const q6_KSPrepGroup = 16 + len(q6_KSMasks)

// q6_KSMasks are the masks q6_KSRow applies, one word per use: in memory,
// each is an operand of its and-instruction (Go keeps 64-bit constants in
// no register across the loop, and the loop has none to spare).
var q6_KSMasks = [...]uint64{
	q6_KSLow6, q6_KSLow6, q6_KSLow6, q6_KSLow6, q6_KSLow6, q6_KSLow6, // quads 0, 4, 1, 5, 2, 3
	q6_KSLow4, q6_KSBits45, q6_KSLow4, q6_KSBits45, // quads 6 and 7
}

// The masks of q6_KSMasks: bits 0–5, 0–3 and 4–5 of each 16-bit lane.
const q6_KSLow6, q6_KSLow4, q6_KSBits45 = 0x003F003F003F003F, 0x000F000F000F000F, 0x0030003000300030

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
			g := (*[q6_KSPrepGroup]uint64)(o[q6_KSPrepGroup*(k/8):])
			g[2*(k%8)] = uint64(m)
			g[2*(k%8)+1] = uint64(1<<47 - 32*s<<48)
			copy(g[16:], q6_KSMasks[:])
		}
		o[8*q6_KSPrepGroup] = uint64(binary.LittleEndian.Uint32(a[:4]))
	}
	return buf
}

// q6_KSRows is the generic tier's Q6_KS kernel (quant's Q6_K dot product
// on the Q6_KS layout); aux is prepQ6_KS's.
func q6_KSRows(out []float32, w []byte, rowBytes, cols int, _, aux []byte) {
	nb := cols / 256
	p := (*[q6_KSPrepBlock]uint64)(words(aux)[:nb*q6_KSPrepBlock])
	fp16 := fp16Floats()
	for r := range out {
		out[r] = q6_KSRow((*[210]byte)(w[r*rowBytes:][:210*nb]), nb, p, fp16)
	}
}

// q6_KSRow returns the dot product of the row of nb ≥ 1 Q6_KS blocks
// from b with the prepared activation from p, block by block: first the
// block's integer lane sums, then its fmas.
//
// The integer sums are S_l (ggml's AVX2 lane l, the sum over the groups g
// of scale(2g + l/4) times quad l's Σ(q−32)·y) in the low 32 bits of
// sum[l] and S_{l+4} in its high 32 bits, modulo 2⁶⁴ (|S| ≤ 2²⁴, so both
// read back exactly: S_l = int32(sum[l]), and S_{l+4} = (sum[l] + 2³¹) >>
// 32 as a signed shift). A quad's operand X (its four quants, unsigned,
// in the 16-bit lanes of a word) times its multiplier U has Σq·y in lane
// 3 (bits 48–63), and in the lanes below partial sums of at most three
// products q·y, |·| ≤ 3·63·128 < 2¹⁵, so below 2⁴⁷ in all. Adding K rounds
// them away and subtracts 32·Σy in lane 3, whose value Σ(q−32)·y lies in
// [−16256, 16384]: the arithmetic shift of X·U + K by 48 reads it
// exactly. The sums are in memory (one read-modify-write instruction
// each), so that the masks, scales and pointers stay in registers; the
// words are byte expressions, which the compiler combines into one load
// each (binary.LittleEndian.Uint64's inlining left a no-op instruction,
// its inline mark, per word).
//
// The fmas are fma(d, float32(S_l), acc[l]) per lane as quant.FMA32
// computes it, d the product of the two blocks' scales. Both steps are in
// this one function: a call per block for either cost more time.
//
//go:noinline
func q6_KSRow(b *[210]byte, nb int, p *[q6_KSPrepBlock]uint64, fp16 *[1 << 16]float32) float32 {
	var acc [8]float32
	for {
		// The block's scale first: the group loop leaves w and u at
		// its end.
		d := math.Float32frombits(uint32(p[8*q6_KSPrepGroup])) * fp16[binary.LittleEndian.Uint16(b[208:])]
		d64 := float64(d)
		var sum [4]uint64
		w, u := unsafe.Pointer(b), unsafe.Pointer(p)
		for g := 0; g < 8; g++ {
			q := (*[26]byte)(w)
			m := (*[q6_KSPrepGroup]uint64)(u)
			sa := uint64(int64(int8(q[24])))
			sb := uint64(int64(int8(q[25]))) << 32
			v0 := uint64(q[0]) | uint64(q[1])<<8 | uint64(q[2])<<16 | uint64(q[3])<<24 | uint64(q[4])<<32 | uint64(q[5])<<40 | uint64(q[6])<<48 | uint64(q[7])<<56
			v2 := uint64(q[16]) | uint64(q[17])<<8 | uint64(q[18])<<16 | uint64(q[19])<<24 | uint64(q[20])<<32 | uint64(q[21])<<40 | uint64(q[22])<<48 | uint64(q[23])<<56
			sum[0] += uint64(int64(v0&m[16]*m[0]+m[1])>>48)*sa + uint64(int64(v2&m[17]*m[8]+m[9])>>48)*sb
			sum[1] += uint64(int64(v0>>6&m[18]*m[2]+m[3])>>48)*sa + uint64(int64(v2>>6&m[19]*m[10]+m[11])>>48)*sb
			v1 := uint64(q[8]) | uint64(q[9])<<8 | uint64(q[10])<<16 | uint64(q[11])<<24 | uint64(q[12])<<32 | uint64(q[13])<<40 | uint64(q[14])<<48 | uint64(q[15])<<56
			sum[2] += uint64(int64(v1&m[20]*m[4]+m[5])>>48)*sa + uint64(int64((v0>>12&m[22]|v2>>8&m[23])*m[12]+m[13])>>48)*sb
			sum[3] += uint64(int64(v1>>6&m[21]*m[6]+m[7])>>48)*sa + uint64(int64((v1>>12&m[24]|v2>>10&m[25])*m[14]+m[15])>>48)*sb
			w, u = unsafe.Add(w, 26), unsafe.Add(u, q6_KSPrepGroup*8)
		}
		// Lane l's sum is the low half of sum[l], l+4's the high half
		// (the low half taken as signed).
		if !q6_KSTry(&acc[0], float64(int32(sum[0])), d64) {
			q6_KSRare(&acc[0], d, int32(sum[0]))
		}
		if !q6_KSTry(&acc[1], float64(int32(sum[1])), d64) {
			q6_KSRare(&acc[1], d, int32(sum[1]))
		}
		if !q6_KSTry(&acc[2], float64(int32(sum[2])), d64) {
			q6_KSRare(&acc[2], d, int32(sum[2]))
		}
		if !q6_KSTry(&acc[3], float64(int32(sum[3])), d64) {
			q6_KSRare(&acc[3], d, int32(sum[3]))
		}
		if !q6_KSTry(&acc[4], float64(int64(sum[0]+1<<31)>>32), d64) {
			q6_KSRare(&acc[4], d, int32(int64(sum[0]+1<<31)>>32))
		}
		if !q6_KSTry(&acc[5], float64(int64(sum[1]+1<<31)>>32), d64) {
			q6_KSRare(&acc[5], d, int32(int64(sum[1]+1<<31)>>32))
		}
		if !q6_KSTry(&acc[6], float64(int64(sum[2]+1<<31)>>32), d64) {
			q6_KSRare(&acc[6], d, int32(int64(sum[2]+1<<31)>>32))
		}
		if !q6_KSTry(&acc[7], float64(int64(sum[3]+1<<31)>>32), d64) {
			q6_KSRare(&acc[7], d, int32(int64(sum[3]+1<<31)>>32))
		}
		if nb--; nb == 0 {
			break
		}
		b = (*[210]byte)(unsafe.Add(w, 210-8*26))
		p = (*[q6_KSPrepBlock]uint64)(unsafe.Add(u, 8*(q6_KSPrepBlock-8*q6_KSPrepGroup)))
	}
	r0, r1, r2, r3 := acc[4]+acc[0], acc[5]+acc[1], acc[6]+acc[2], acc[7]+acc[3]
	return (r0 + r2) + (r1 + r3)
}

// q6_KSTry sets *a to fma(d, s, *a) as quant.FMA32 computes it and
// reports true when fma32Try's fast path can (d64 is float64(d), s an
// integer of at most 2²⁴ in magnitude, a float32); false leaves it to
// q6_KSRare.
func q6_KSTry(a *float32, s, d64 float64) bool {
	if x := float64(float64(s*d64) + float64(*a)); fma32Fits(math.Float64bits(x)) {
		*a = float32(x)
		return true
	}
	return false
}

// q6_KSRare sets *a to fma(d, s, *a) (fma32Rare).
//
//go:noinline
func q6_KSRare(a *float32, d float32, s int32) { *a = fma32Rare(d, float32(s), *a) }
