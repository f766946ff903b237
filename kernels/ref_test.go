package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"

	"github.com/x448/float16"

	"github.com/qsf-llm/qsf/quant"
)

// This file holds the tests' own scalar reference kernels and random data,
// so that the assembly kernels are checked independently of package quant.

func f16At(b []byte) float32 { return float16.Frombits(binary.LittleEndian.Uint16(b)).Float32() }

func putF16(b []byte, f float32) { binary.LittleEndian.PutUint16(b, float16.Fromfloat32(f).Bits()) }

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// refDot is a scalar dot product of n elements of one weight row with act,
// in float64, together with the sum of the magnitudes of its per-element
// terms: the scale of the rounding error of any order of summation, however
// much the terms cancel.
type refDot func(n int, w, act []byte) (dot, mag float64)

var refDots = map[quant.Type]refDot{
	quant.Q8_0:   refQ8_0,
	quant.Q4_0:   refQ4_0,
	quant.Q2_K:   refQ2_K,
	quant.Q3_K:   refQ3_K,
	quant.Q4_K:   refQ4_K,
	quant.Q5_K:   refQ5_K,
	quant.IQ4_NL: refLegacy(quant.IQ4_NL),
	quant.Q5_0:   refLegacy(quant.Q5_0),
	quant.Q4_1:   refLegacy(quant.Q4_1),
	quant.Q5_1:   refLegacy(quant.Q5_1),
	quant.Q6_K:   refQ6_K,
	quant.F32:    refF32,
	quant.F16:    refF16,
	quant.BF16:   refBF16,
	quant.TQ1_0:  refTQ1_0,
	quant.TQ2_0:  refTQ2_0,
}

func bf16Val(b []byte, i int) float32 {
	return math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16)
}

func refBF16(n int, w, act []byte) (dot, mag float64) {
	for i := 0; i < n; i++ {
		t := float64(bf16Val(w, i)) * float64(bf16Val(act, i))
		dot += t
		mag += math.Abs(t)
	}
	return dot, mag
}

func refF32(n int, w, act []byte) (dot, mag float64) {
	for i := 0; i < n; i++ {
		t := float64(math.Float32frombits(binary.LittleEndian.Uint32(w[4*i:]))) *
			float64(math.Float32frombits(binary.LittleEndian.Uint32(act[4*i:])))
		dot += t
		mag += math.Abs(t)
	}
	return dot, mag
}

func refF16(n int, w, act []byte) (dot, mag float64) {
	for i := 0; i < n; i++ {
		t := float64(f16At(w[2*i:])) * float64(f16At(act[2*i:]))
		dot += t
		mag += math.Abs(t)
	}
	return dot, mag
}

func q8KD(b []byte) float64 { return float64(math.Float32frombits(binary.LittleEndian.Uint32(b))) }

// k4ScaleMin returns the 6-bit scale and min of sub-block j of a Q4_K
// block's 12 scale bytes.
func k4ScaleMin(j int, q []byte) (sc, m int) {
	if j < 4 {
		return int(q[j] & 63), int(q[j+4] & 63)
	}
	return int(q[j+4]&15 | (q[j-4]>>6)<<4), int(q[j+4]>>4 | (q[j]>>6)<<4)
}

func refQ4_K(n int, w, act []byte) (dot, mag float64) {
	for b := 0; b < n/256; b++ {
		wb, ab := w[b*144:], act[b*292:]
		da := q8KD(ab)
		d, dmin := float64(f16At(wb))*da, float64(f16At(wb[2:]))*da
		for j := 0; j < 8; j++ {
			sc, m := k4ScaleMin(j, wb[4:])
			var isum, asum, iabs, aabs int64
			for i := 0; i < 32; i++ {
				e := 32*j + i
				q := wb[16+32*(j/2)+i]
				if j%2 == 1 {
					q >>= 4
				}
				a := int64(int8(ab[4+e]))
				isum += int64(q&15) * a
				asum += a
				iabs += int64(q&15) * abs64(a)
				aabs += abs64(a)
			}
			t1, t2 := d*float64(sc)*float64(isum), dmin*float64(m)*float64(asum)
			dot += t1 - t2
			mag += math.Abs(d*float64(sc))*float64(iabs) + math.Abs(dmin*float64(m))*float64(aabs)
		}
	}
	return dot, mag
}

func refQ2_K(n int, w, act []byte) (dot, mag float64) {
	for b := 0; b < n/256; b++ {
		wb, ab := w[b*84:], act[b*292:]
		da := q8KD(ab)
		d, dmin := float64(f16At(wb[80:]))*da, float64(f16At(wb[82:]))*da
		for e := 0; e < 256; e++ {
			h, l := e/128, e%128
			q := int64(wb[16+32*h+l%32] >> (2 * (l / 32)) & 3)
			sc, m := int64(wb[e/16]&15), int64(wb[e/16]>>4)
			a := int64(int8(ab[4+e]))
			t1, t2 := d*float64(sc*q*a), dmin*float64(m*a)
			dot += t1 - t2
			mag += math.Abs(t1) + math.Abs(t2)
		}
	}
	return dot, mag
}

// q3KScale is the signed scale of group g of a Q3_K block's 12 scale bytes.
func q3KScale(sc []byte, g int) int64 {
	lo := sc[g%8] & 15
	if g >= 8 {
		lo = sc[g%8] >> 4
	}
	hi := sc[8+g%4] >> (2 * (g / 4)) & 3
	return int64(lo|hi<<4) - 32
}

func refQ3_K(n int, w, act []byte) (dot, mag float64) {
	for b := 0; b < n/256; b++ {
		wb, ab := w[b*110:], act[b*292:]
		d := float64(f16At(wb[108:])) * q8KD(ab)
		for e := 0; e < 256; e++ {
			h, l := e/128, e%128
			j := l / 32
			q := int64(wb[32+32*h+l%32]>>(2*j)) & 3
			if wb[l%32]>>(4*h+j)&1 == 0 {
				q -= 4
			}
			t := d * float64(q3KScale(wb[96:], e/16)*q*int64(int8(ab[4+e])))
			dot += t
			mag += math.Abs(t)
		}
	}
	return dot, mag
}

func refQ5_K(n int, w, act []byte) (dot, mag float64) {
	for b := 0; b < n/256; b++ {
		wb, ab := w[b*176:], act[b*292:]
		da := q8KD(ab)
		d, dmin := float64(f16At(wb))*da, float64(f16At(wb[2:]))*da
		for j := 0; j < 8; j++ {
			sc, m := k4ScaleMin(j, wb[4:])
			var isum, asum, iabs, aabs int64
			for i := 0; i < 32; i++ {
				e := 32*j + i
				q := wb[48+32*(j/2)+i]
				if j%2 == 1 {
					q >>= 4
				}
				hi := wb[16+i] >> j & 1
				a := int64(int8(ab[4+e]))
				isum += int64(q&15|hi<<4) * a
				asum += a
				iabs += int64(q&15|hi<<4) * abs64(a)
				aabs += abs64(a)
			}
			t1, t2 := d*float64(sc)*float64(isum), dmin*float64(m)*float64(asum)
			dot += t1 - t2
			mag += math.Abs(d*float64(sc))*float64(iabs) + math.Abs(dmin*float64(m))*float64(aabs)
		}
	}
	return dot, mag
}

func refQ6_K(n int, w, act []byte) (dot, mag float64) {
	for b := 0; b < n/256; b++ {
		wb, ab := w[b*210:], act[b*292:]
		d := float64(f16At(wb[208:])) * q8KD(ab)
		for e := 0; e < 256; e++ {
			h, l := e/128, e%128 // half, index in half
			ql := wb[64*h+l%64]
			if l >= 64 {
				ql >>= 4
			}
			qh := wb[128+32*h+l%32] >> (2 * (l / 32)) & 3
			q := int64(ql&15|qh<<4) - 32
			t := d * float64(int8(wb[192+e/16])) * float64(q) * float64(int8(ab[4+e]))
			dot += t
			mag += math.Abs(t)
		}
	}
	return dot, mag
}

func refQ8_0(n int, w, act []byte) (dot, mag float64) {
	for b := 0; b < n/32; b++ {
		wb, ab := w[b*34:], act[b*34:]
		var isum, iabs int64
		for j := 0; j < 32; j++ {
			p := int64(int8(wb[2+j])) * int64(int8(ab[2+j]))
			isum += p
			iabs += abs64(p)
		}
		d := float64(f16At(wb)) * float64(f16At(ab))
		dot += d * float64(isum)
		mag += math.Abs(d) * float64(iabs)
	}
	return dot, mag
}

var iq4nlValues = [16]int64{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// refLegacy returns the reference of IQ4_NL, Q5_0, Q4_1 or Q5_1: unpack
// each block's 32 quants and compute d·da·Σq·a (+ m·s for the _1 types).
func refLegacy(t quant.Type) refDot {
	return func(n int, w, act []byte) (dot, mag float64) {
		bb, ab := t.BlockBytes(), vecDotType[t].BlockBytes()
		for b := 0; b < n/32; b++ {
			wb, a := w[b*bb:(b+1)*bb], act[b*ab:(b+1)*ab]
			var q [32]int64
			var qs []byte
			var qh uint32
			switch t {
			case quant.IQ4_NL, quant.Q4_1:
				qs = wb[bb-16:]
			case quant.Q5_0, quant.Q5_1:
				qs = wb[bb-16:]
				qh = binary.LittleEndian.Uint32(wb[bb-20:])
			}
			for j := 0; j < 16; j++ {
				q[j], q[j+16] = int64(qs[j]&15), int64(qs[j]>>4)
			}
			for j := range q {
				switch t {
				case quant.IQ4_NL:
					q[j] = iq4nlValues[q[j]]
				case quant.Q5_0:
					q[j] += int64(qh>>j&1)<<4 - 16
				case quant.Q5_1:
					q[j] += int64(qh>>j&1) << 4
				}
			}
			var isum, iabs int64
			for j := range q {
				p := q[j] * int64(int8(a[ab-32+j]))
				isum += p
				iabs += abs64(p)
			}
			d := float64(f16At(wb)) * float64(f16At(a))
			dot += d * float64(isum)
			mag += math.Abs(d) * float64(iabs)
			if t == quant.Q4_1 || t == quant.Q5_1 {
				t2 := float64(f16At(wb[2:])) * float64(f16At(a[2:]))
				dot += t2
				mag += math.Abs(t2)
			}
		}
		return dot, mag
	}
}

func refQ4_0(n int, w, act []byte) (dot, mag float64) {
	for b := 0; b < n/32; b++ {
		wb, ab := w[b*18:], act[b*34:]
		var isum, iabs int64
		for j := 0; j < 16; j++ {
			lo := (int64(wb[2+j]&15) - 8) * int64(int8(ab[2+j]))
			hi := (int64(wb[2+j]>>4) - 8) * int64(int8(ab[2+16+j]))
			isum += lo + hi
			iabs += abs64(lo) + abs64(hi)
		}
		d := float64(f16At(wb)) * float64(f16At(ab))
		dot += d * float64(isum)
		mag += math.Abs(d) * float64(iabs)
	}
	return dot, mag
}

// scale returns a random fp16-representable block scale in a sane range.
func scale(r *rand.Rand) float32 {
	s := float32(math.Exp2(-12 + 10*r.Float64()))
	if r.IntN(2) == 0 {
		s = -s
	}
	return s
}

// randomRows returns rows×cols random, valid elements of type t.
func randomRows(r *rand.Rand, t quant.Type, rows, cols int) []byte {
	n, err := quant.RowBytes(t, cols)
	if err != nil {
		panic(err)
	}
	b := make([]byte, rows*n)
	switch t {
	case quant.Q8_0:
		for o := 0; o < len(b); o += 34 {
			putF16(b[o:], scale(r))
			for j := 0; j < 32; j++ {
				b[o+2+j] = byte(int8(r.IntN(255) - 127))
			}
		}
	case quant.Q4_1, quant.Q5_0, quant.Q5_1, quant.IQ4_NL:
		bb := t.BlockBytes()
		for o := 0; o < len(b); o += bb {
			for j := 0; j < bb; j++ {
				b[o+j] = byte(r.IntN(256))
			}
			putF16(b[o:], scale(r))
			if t == quant.Q4_1 || t == quant.Q5_1 {
				putF16(b[o+2:], scale(r))
			}
		}
	case quant.Q8_1:
		for o := 0; o < len(b); o += 36 {
			d := scale(r)
			sum := 0
			for j := 0; j < 32; j++ {
				q := r.IntN(255) - 127
				b[o+4+j] = byte(int8(q))
				sum += q
			}
			putF16(b[o:], d)
			putF16(b[o+2:], d*float32(sum))
		}
	case quant.Q4_0:
		for o := 0; o < len(b); o += 18 {
			putF16(b[o:], scale(r))
			for j := 0; j < 16; j++ {
				b[o+2+j] = byte(r.IntN(256))
			}
		}
	case quant.F32:
		for o := 0; o < len(b); o += 4 {
			binary.LittleEndian.PutUint32(b[o:], math.Float32bits(float32(r.NormFloat64())))
		}
	case quant.BF16:
		for o := 0; o < len(b); o += 2 {
			binary.LittleEndian.PutUint16(b[o:], uint16(math.Float32bits(float32(r.NormFloat64()))>>16))
		}
	case quant.F16:
		for o := 0; o < len(b); o += 2 {
			putF16(b[o:], float32(r.NormFloat64()))
		}
	case quant.Q4_K:
		for o := 0; o < len(b); o += 144 {
			putF16(b[o:], scale(r)/16)
			putF16(b[o+2:], scale(r)/16)
			for j := 4; j < 144; j++ {
				b[o+j] = byte(r.IntN(256))
			}
		}
	case quant.Q2_K, quant.Q3_K:
		bb := t.BlockBytes()
		for o := 0; o < len(b); o += bb {
			for j := 0; j < bb; j++ {
				b[o+j] = byte(r.IntN(256))
			}
			if t == quant.Q2_K {
				putF16(b[o+80:], scale(r)/16)
				putF16(b[o+82:], scale(r)/16)
			} else {
				putF16(b[o+108:], scale(r)/32)
			}
		}
	case quant.Q5_K:
		for o := 0; o < len(b); o += 176 {
			putF16(b[o:], scale(r)/32)
			putF16(b[o+2:], scale(r)/32)
			for j := 4; j < 176; j++ {
				b[o+j] = byte(r.IntN(256))
			}
		}
	case quant.Q6_K:
		for o := 0; o < len(b); o += 210 {
			for j := 0; j < 208; j++ {
				b[o+j] = byte(r.IntN(256))
			}
			putF16(b[o+208:], scale(r)/32)
		}
	case quant.Q8_K:
		for o := 0; o < len(b); o += 292 {
			binary.LittleEndian.PutUint32(b[o:], math.Float32bits(scale(r)))
			for g := 0; g < 16; g++ {
				sum := 0
				for j := 0; j < 16; j++ {
					q := r.IntN(255) - 127
					b[o+4+16*g+j] = byte(int8(q))
					sum += q
				}
				binary.LittleEndian.PutUint16(b[o+260+2*g:], uint16(int16(sum)))
			}
		}
	case quant.TQ1_0, quant.TQ2_0:
		// Any byte: TQ1_0 decodes every byte to trits, and TQ2_0's code 3
		// (which quantize never writes) must still agree across tiers.
		bb := t.BlockBytes()
		for o := 0; o < len(b); o += bb {
			for j := 0; j < bb; j++ {
				b[o+j] = byte(r.IntN(256))
			}
			putF16(b[o+bb-2:], scale(r))
		}
	case quant.QSF_Q2R, quant.QSF_Q3R, quant.QSF_Q4R:
		// Any codes and multipliers.
		bb := t.BlockBytes()
		for o := 0; o < len(b); o += bb {
			for j := 2; j < bb; j++ {
				b[o+j] = byte(r.IntN(256))
			}
			putF16(b[o:], scale(r)/16)
		}
	default:
		panic("randomRows: no generator for " + t.String())
	}
	return b
}

// vecDotType is the activation type of each type the tests generate.
var vecDotType = map[quant.Type]quant.Type{
	quant.QSF_Q2R: quant.Q8_0,
	quant.QSF_Q3R: quant.Q8_0,
	quant.QSF_Q4R: quant.Q8_0,
	quant.Q8_0:    quant.Q8_0,
	quant.Q4_0:    quant.Q8_0,
	quant.Q2_K:    quant.Q8_K,
	quant.Q3_K:    quant.Q8_K,
	quant.Q4_K:    quant.Q8_K,
	quant.IQ4_NL:  quant.Q8_0,
	quant.Q5_0:    quant.Q8_0,
	quant.Q4_1:    quant.Q8_1,
	quant.Q5_1:    quant.Q8_1,
	quant.Q5_K:    quant.Q8_K,
	quant.Q6_K:    quant.Q8_K,
	quant.Q8_K:    quant.Q8_K,
	quant.F32:     quant.F32,
	quant.F16:     quant.F16,
	quant.BF16:    quant.BF16,
	quant.TQ1_0:   quant.Q8_K,
	quant.TQ2_0:   quant.Q8_K,
}
