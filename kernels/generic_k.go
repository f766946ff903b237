package kernels

import (
	"encoding/binary"
	"math"

	"github.com/qsf-llm/qsf/quant"
)

// The generic tier's K-quant kernels compute the integer lane sums of
// quant's dot products (ggml's AVX2 lanes: lane 4·(j mod 2)+m gets the
// four-element products of group m of 16-element sub-block j, times the
// sub-block's scale) with SWAR products, two groups of four elements at
// a time, and keep quant's float arithmetic (one fma per lane and block,
// hsum_float_8). Eight 6-bit (or 4-bit) quants e₀..e₇ sit in the bytes of
// a uint64 Q. E = Q & 0x00FF00FF00FF00FF holds e₀, e₂, e₄, e₆ in its 16-bit
// lanes and O = Q>>8 & 0x00FF00FF00FF00FF holds e₁, e₃, e₅, e₇. With the
// activation quants as signed integers modulo 2⁶⁴,
// Uₐ = y₂ + y₀·2¹⁶ and U_b = y₆ + y₄·2¹⁶ (and Uₐ', U_b' of y₁, y₃, y₅, y₇),
// A = E·Uₐ + O·Uₐ' has e₀y₀+e₁y₁+e₂y₂+e₃y₃ in its lane 1 and
// B = E·U_b + O·U_b' has e₄y₄+…+e₇y₇ in its lane 3. Each lane below the one
// read holds at most four products (two per multiplication), so |lower lanes| < 2¹⁵ (lane 1) or
// < 2⁴⁷ (lane 3) and the reads int16((A+2¹⁵)>>16) and (B+2⁴⁷)>>48 are
// exact while the sum itself is below 2¹⁵ in magnitude. Q6_K's quants
// enter the lanes unsigned (below 64, so 4·63·128 < 2¹⁵) and the prepared
// activation's read offsets subtract 32·Σy (swarPairK).

// q6_KPrepBlock is the number of uint64 words per block of the generic
// Q6_K kernel's prepared Q8_K activation: per group of eight elements
// (32 of them, in the kernel's order) Uₐ, Uₐ' − 2⁸·Uₐ, U_b, U_b' − 2⁸·U_b
// (swarPairK) and the two read
// offsets Kₐ = 2¹⁵ − 32·(y₀+…+y₃)·2¹⁶ and K_b = 2⁴⁷ − 32·(y₄+…+y₇)·2⁴⁸;
// then the block's float32 scale.
const q6_KPrepBlock = 32*6 + 1

// q6_KGroupStart returns the first element of the k-th group of eight of
// a Q6_K block in the order the kernel walks them: half h, then l (0, 8,
// 16, 24), then the four element ranges l, 32+l, 64+l, 96+l of the half.
func q6_KGroupStart(k int) int {
	h, l, c := k/16, k/4%4*8, k%4
	return 128*h + 32*c + l
}

// prepQ6_KSWAR builds the generic Q6_K kernel's prepared activation.
func prepQ6_KSWAR(buf, act []byte, cols int) []byte {
	nb := cols / 256
	need := nb * q6_KPrepBlock * 8
	if cap(buf) < need {
		buf = make([]byte, need)
	}
	buf = buf[:need]
	u := words(buf)
	for b := 0; b < nb; b++ {
		a := (*[292]byte)(act[292*b:])
		o := (*[q6_KPrepBlock]uint64)(u[q6_KPrepBlock*b:])
		for k := 0; k < 32; k++ {
			y := (*[8]byte)(a[4+q6_KGroupStart(k):])
			g := (*[6]uint64)(o[6*k:])
			putGroupU((*[4]uint64)(g[:4]), y)
			// swarPairK multiplies Q itself by Uₐ and U_b (see there).
			g[1] -= g[0] << 8
			g[3] -= g[2] << 8
			var sa, sb int64
			for i := 0; i < 4; i++ {
				sa += int64(int8(y[i]))
				sb += int64(int8(y[4+i]))
			}
			g[4] = uint64(1<<15 - 32*sa<<16)
			g[5] = uint64(1<<47 - 32*sb<<48)
		}
		o[192] = uint64(binary.LittleEndian.Uint32(a[:4]))
	}
	return buf
}

// putGroupU writes the SWAR multipliers Uₐ, Uₐ', U_b, U_b' of eight
// activation quants y.
func putGroupU(o *[4]uint64, y *[8]byte) {
	v := func(i int) uint64 { return uint64(int64(int8(y[i]))) }
	o[0] = v(2) + v(0)<<16
	o[1] = v(3) + v(1)<<16
	o[2] = v(6) + v(4)<<16
	o[3] = v(7) + v(5)<<16
}

// swarPair returns the integer dot products of the two groups of four
// quants in the bytes of q, each minus bias (the quants are below 64),
// with the activation quants whose multipliers are u. The lanes of E and
// O hold the quants minus bias as signed 16-bit values (the SWAR sums are
// taken modulo 2⁶⁴, so negative lanes are exact).
func swarPair(q, bias uint64, u *[4]uint64) (int32, int32) {
	const m = 0x00FF00FF00FF00FF
	e, o := q&m-bias, q>>8&m-bias
	a := e*u[0] + o*u[1]
	b := e*u[2] + o*u[3]
	return int32(int16((a + 1<<15) >> 16)), int32(int64(b+1<<47) >> 48)
}

// swarPairK returns the integer dot products minus 32·Σy of the two
// groups of four 6-bit quants in the bytes of q with the activation
// quants whose multipliers and read offsets are g: the quants enter the
// lanes unsigned (below 64), so each lane holds at most four products,
// |·| ≤ 4·63·128 < 2¹⁵, and the offsets add the read's rounding constant
// and subtract 32·Σy in the lane read, where the result Σ(q−32)·y lies
// in [−16256, 16384]. Q's 16-bit lanes are E + 2⁸·O, so with g holding
// Uₐ' − 2⁸·Uₐ and U_b' − 2⁸·U_b in place of Uₐ' and U_b' (modulo 2⁶⁴),
// Q·Uₐ + O·(Uₐ' − 2⁸·Uₐ) = E·Uₐ + O·Uₐ' exactly and E need not be masked
// out.
func swarPairK(q uint64, g *[6]uint64) (int32, int32) {
	const m = 0x00FF00FF00FF00FF
	o := q >> 8 & m
	a := q*g[0] + o*g[1] + g[4]
	b := q*g[2] + o*g[3] + g[5]
	return int32(int16(a >> 16)), int32(int64(b) >> 48)
}

// q6_KSWAR is the generic tier's Q6_K kernel (quant's Q6_K dot product);
// aux is prepQ6_KSWAR's.
func q6_KSWAR(out []float32, w []byte, rowBytes, cols int, _, aux []byte) {
	nb := cols / 256
	u := words(aux)[:nb*q6_KPrepBlock]
	fp16 := fp16Floats()
	for r := range out {
		row := w[r*rowBytes:][:210*nb]
		var acc [8]float32
		for i := 0; i < nb; i++ {
			bl := (*[210]byte)(row[210*i:])
			p := (*[q6_KPrepBlock]uint64)(u[q6_KPrepBlock*i:])
			var s [8]int32
			for h := 0; h < 2; h++ {
				// Half h of the block: its 64 bytes of low bits, 32 of
				// high bits, 8 scales and 96 prepared words.
				ql := (*[64]byte)(bl[64*h:])
				qhb := (*[32]byte)(bl[128+32*h:])
				sc := (*[8]byte)(bl[192+8*h:])
				gh := (*[96]uint64)(p[96*h:])
				for l := 0; l < 32; l += 8 {
					// The quants' two high bits sit at bits 4 and 5 of
					// each byte of qh<<4, qh<<2, qh and qh>>2.
					const lo, hb = 0x0F0F0F0F0F0F0F0F, 0x3030303030303030
					l0 := binary.LittleEndian.Uint64(ql[l:])
					l1 := binary.LittleEndian.Uint64(ql[32+l:])
					qh := binary.LittleEndian.Uint64(qhb[l:])
					g := (*[24]uint64)(gh[3*l:])
					sj := l / 16 // sub-block j = 8h + 2c + sj for range c
					ga0, ga1 := swarPairK(l0&lo|qh<<4&hb, (*[6]uint64)(g[0:]))
					gb0, gb1 := swarPairK(l1&lo|qh<<2&hb, (*[6]uint64)(g[6:]))
					gc0, gc1 := swarPairK(l0>>4&lo|qh&hb, (*[6]uint64)(g[12:]))
					gd0, gd1 := swarPairK(l1>>4&lo|qh>>2&hb, (*[6]uint64)(g[18:]))
					k := l / 4
					sa, sb, scc, sd := int32(int8(sc[sj])), int32(int8(sc[2+sj])), int32(int8(sc[4+sj])), int32(int8(sc[6+sj]))
					s[k] += sa*ga0 + sb*gb0 + scc*gc0 + sd*gd0
					s[k+1] += sa*ga1 + sb*gb1 + scc*gc1 + sd*gd1
				}
			}
			d := math.Float32frombits(uint32(p[192])) * fp16[binary.LittleEndian.Uint16(bl[208:])]
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

// newGenericTier returns the generic tier: quant's dot products, with the
// SWAR kernels of this package where they are faster.
func newGenericTier() *Tier {
	t := &Tier{name: "generic"}
	t.register([]kernelRow{
		{key: quant.Q6_K, rows: q6_KSWAR, prep: prepQ6_KSWAR},
		{key: quant.Q4_K, rows: q4_KSWAR, prep: prepQ4_KSWAR},
		{key: quant.F32, rows: f32RowsGeneric},
	})
	return t
}

// q4_KPrepBlock is the number of uint64 words per block of the generic
// Q4_K kernel's prepared Q8_K activation: Uₐ, Uₐ', U_b, U_b' per group of
// eight elements in the kernel's order (chunk c, then l = 0, 8, 16, 24,
// then the low and the high nibbles: elements 64c+l and 64c+32+l), then
// the block's float32 scale.
const q4_KPrepBlock = 32*4 + 1

// prepQ4_KSWAR builds the generic Q4_K kernel's prepared activation.
func prepQ4_KSWAR(buf, act []byte, cols int) []byte {
	nb := cols / 256
	need := nb * q4_KPrepBlock * 8
	if cap(buf) < need {
		buf = make([]byte, need)
	}
	buf = buf[:need]
	u := words(buf)
	for b := 0; b < nb; b++ {
		a := (*[292]byte)(act[292*b:])
		o := (*[q4_KPrepBlock]uint64)(u[q4_KPrepBlock*b:])
		for k := 0; k < 32; k++ {
			c, l, half := k/8, k/2%4*8, k%2
			putGroupU((*[4]uint64)(o[4*k:]), (*[8]byte)(a[4+64*c+32*half+l:]))
		}
		o[128] = uint64(binary.LittleEndian.Uint32(a[:4]))
	}
	return buf
}

// q4_KSWAR is the generic tier's Q4_K kernel (quant's Q4_K dot product:
// the lanes of the scaled sums and a four-lane accumulator of the mins);
// aux is prepQ4_KSWAR's.
func q4_KSWAR(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	nb := cols / 256
	u := words(aux)[:nb*q4_KPrepBlock]
	act = act[:292*nb]
	fp16 := fp16Floats()
	for r := range out {
		row := w[r*rowBytes : (r+1)*rowBytes]
		var acc [8]float32
		var accM [4]float32
		for i := 0; i < nb; i++ {
			bl := (*[144]byte)(row[144*i:])
			p := (*[q4_KPrepBlock]uint64)(u[q4_KPrepBlock*i:])
			a := (*[292]byte)(act[292*i:])
			yd := math.Float32frombits(uint32(p[128]))
			dmin := -yd * fp16[binary.LittleEndian.Uint16(bl[2:])]
			q := (*[12]byte)(bl[4:])
			var sc, mn [8]int32
			for j := 0; j < 4; j++ {
				sc[j], mn[j] = int32(q[j]&63), int32(q[j+4]&63)
				sc[j+4] = int32(q[j+8]&0xF | (q[j]>>6)<<4)
				mn[j+4] = int32(q[j+8]>>4 | (q[j+4]>>6)<<4)
			}
			for k := range accM {
				bs := func(j int) int32 { return int32(int16(uint16(a[260+2*j]) | uint16(a[261+2*j])<<8)) }
				m := mn[2*k]*(bs(4*k)+bs(4*k+1)) + mn[2*k+1]*(bs(4*k+2)+bs(4*k+3))
				if v, ok := fma32Try(dmin, float32(m), accM[k]); ok {
					accM[k] = v
				} else {
					accM[k] = fma32Rare(dmin, float32(m), accM[k])
				}
			}
			var s [8]int32
			for c := 0; c < 4; c++ {
				slo, shi := sc[2*c], sc[2*c+1]
				for l := 0; l < 32; l += 8 {
					const lo = 0x0F0F0F0F0F0F0F0F
					v := binary.LittleEndian.Uint64(bl[16+32*c+l:])
					g := (*[8]uint64)(p[4*(8*c+l/4):])
					a0, a1 := swarPair(v&lo, 0, (*[4]uint64)(g[0:]))
					b0, b1 := swarPair(v>>4&lo, 0, (*[4]uint64)(g[4:]))
					k := l / 4
					s[k] += slo*a0 + shi*b0
					s[k+1] += slo*a1 + shi*b1
				}
			}
			d := yd * fp16[binary.LittleEndian.Uint16(bl[0:])]
			for k := range acc {
				if v, ok := fma32Try(d, float32(s[k]), acc[k]); ok {
					acc[k] = v
				} else {
					acc[k] = fma32Rare(d, float32(s[k]), acc[k])
				}
			}
		}
		r0, r1, r2, r3 := acc[4]+acc[0], acc[5]+acc[1], acc[6]+acc[2], acc[7]+acc[3]
		out[r] = ((r0 + r2) + (r1 + r3)) + ((accM[0] + accM[2]) + (accM[1] + accM[3]))
	}
}
