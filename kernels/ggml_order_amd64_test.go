//go:build amd64 && !purego

package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// These models restate, in Go, the floating-point order of ggml's AVX2
// vec_dot kernels (8-lane FMA accumulators, hsum_float_8); the AVX2 kernels
// for these types must match them bit for bit, so that QSF's sums round as
// an AVX2 build of llama.cpp does.

func fma32(a, b, c float32) float32 { return float32(math.FMA(float64(a), float64(b), float64(c))) }

// hsum8 is ggml's hsum_float_8.
func hsum8(x [8]float32) float32 {
	var r [4]float32
	for i := range r {
		r[i] = x[4+i] + x[i]
	}
	a, b := r[0]+r[2], r[1]+r[3]
	return a + b
}

// ggmlLegacy models ggml_vec_dot_q8_0_q8_0 and _q4_0_q8_0: q returns the
// 32 signed quants of weight block b.
func ggmlLegacy(nb int, w []byte, bb int, act []byte, q func(blk []byte) [32]int32) float32 {
	var acc [8]float32
	for b := 0; b < nb; b++ {
		blk, a := w[bb*b:bb*(b+1)], act[34*b:34*(b+1)]
		d := f16At(blk) * f16At(a)
		qs := q(blk)
		for l := 0; l < 8; l++ {
			var s int32
			for k := 0; k < 4; k++ {
				s += qs[4*l+k] * int32(int8(a[2+4*l+k]))
			}
			acc[l] = fma32(d, float32(s), acc[l])
		}
	}
	return hsum8(acc)
}

func q8Quants(blk []byte) (q [32]int32) {
	for j := range q {
		q[j] = int32(int8(blk[2+j]))
	}
	return q
}

func q4Quants(blk []byte) (q [32]int32) {
	for j := 0; j < 16; j++ {
		q[j], q[j+16] = int32(blk[2+j]&15)-8, int32(blk[2+j]>>4)-8
	}
	return q
}

func q5_0Quants(blk []byte) (q [32]int32) {
	qh := binary.LittleEndian.Uint32(blk[2:])
	for j := 0; j < 16; j++ {
		q[j] = int32(blk[6+j]&15|byte(qh>>j&1)<<4) - 16
		q[j+16] = int32(blk[6+j]>>4|byte(qh>>(j+16)&1)<<4) - 16
	}
	return q
}

func iq4nlQuants(blk []byte) (q [32]int32) {
	for j := 0; j < 16; j++ {
		q[j], q[j+16] = int32(iq4nlValues[blk[2+j]&15]), int32(iq4nlValues[blk[2+j]>>4])
	}
	return q
}

// lanes8 returns the eight 4-quant lane sums of a block's product.
func lanes8(q [32]int32, a []byte) (l [8]int32) {
	for i := range l {
		for k := 0; k < 4; k++ {
			l[i] += q[4*i+k] * int32(int8(a[4*i+k]))
		}
	}
	return l
}

// ggmlIQ4NL models ggml_vec_dot_iq4_nl_q8_0's AVX2 path: even and odd
// blocks in two accumulators, a scalar tail block.
func ggmlIQ4NL(nb int, w, act []byte) float32 {
	var acc [2][8]float32
	b := 0
	for ; b+1 < nb; b += 2 {
		for h := 0; h < 2; h++ {
			blk, a := w[18*(b+h):], act[34*(b+h):]
			d := f16At(a) * f16At(blk)
			l := lanes8(iq4nlQuants(blk), a[2:])
			for i := range l {
				acc[h][i] = fma32(d, float32(l[i]), acc[h][i])
			}
		}
	}
	var sum [8]float32
	for i := range sum {
		sum[i] = acc[0][i] + acc[1][i]
	}
	sumf := hsum8(sum)
	if b < nb {
		blk, a := w[18*b:], act[34*b:]
		var isum int32
		for _, v := range lanes8(iq4nlQuants(blk), a[2:]) {
			isum += v
		}
		sumf = fma32(f16At(a)*f16At(blk), float32(isum), sumf)
	}
	return sumf
}

// ggmlLegacy1 models ggml_vec_dot_q4_1_q8_1 and _q5_1_q8_1: q returns the
// 32 unsigned quants of a weight block whose nibbles start at qsOff.
func ggmlLegacy1(nb int, w []byte, bb int, act []byte, q func(blk []byte) [32]int32) float32 {
	var acc [8]float32
	var summs float32
	for b := 0; b < nb; b++ {
		blk, a := w[bb*b:bb*(b+1)], act[36*b:36*(b+1)]
		summs = fma32(f16At(blk[2:]), f16At(a[2:]), summs)
		d := f16At(blk) * f16At(a)
		l := lanes8(q(blk), a[4:])
		for i := range l {
			acc[i] = fma32(d, float32(l[i]), acc[i])
		}
	}
	return hsum8(acc) + summs
}

func q4_1Quants(blk []byte) (q [32]int32) {
	for j := 0; j < 16; j++ {
		q[j], q[j+16] = int32(blk[4+j]&15), int32(blk[4+j]>>4)
	}
	return q
}

func q5_1Quants(blk []byte) (q [32]int32) {
	qh := binary.LittleEndian.Uint32(blk[4:])
	for j := 0; j < 16; j++ {
		q[j] = int32(blk[8+j]&15 | byte(qh>>j&1)<<4)
		q[j+16] = int32(blk[8+j]>>4 | byte(qh>>(j+16)&1)<<4)
	}
	return q
}

// ggmlQ4_K models ggml_vec_dot_q4_K_q8_K's AVX2 path.
func ggmlQ4_K(nb int, w, act []byte) float32 {
	var acc [8]float32
	var accM [4]float32
	for b := 0; b < nb; b++ {
		x, y := w[144*b:144*(b+1)], act[292*b:292*(b+1)]
		yd := math.Float32frombits(binary.LittleEndian.Uint32(y))
		d, dmin := yd*f16At(x), -yd*f16At(x[2:])
		var sc, mn [8]int32
		for j := range sc {
			s, m := k4ScaleMin(j, x[4:])
			sc[j], mn[j] = int32(s), int32(m)
		}
		bsum := func(g int) int32 { return int32(int16(binary.LittleEndian.Uint16(y[260+2*g:]))) }
		for m := 0; m < 4; m++ {
			p := mn[2*m]*(bsum(4*m)+bsum(4*m+1)) + mn[2*m+1]*(bsum(4*m+2)+bsum(4*m+3))
			accM[m] = fma32(dmin, float32(p), accM[m])
		}
		var sumi [8]int32
		for j := 0; j < 4; j++ {
			for l := 0; l < 8; l++ {
				var lo, hi int32
				for k := 0; k < 4; k++ {
					qb := x[16+32*j+4*l+k]
					lo += int32(qb&15) * int32(int8(y[4+64*j+4*l+k]))
					hi += int32(qb>>4) * int32(int8(y[4+64*j+32+4*l+k]))
				}
				sumi[l] += sc[2*j]*lo + sc[2*j+1]*hi
			}
		}
		for l := range acc {
			acc[l] = fma32(d, float32(sumi[l]), acc[l])
		}
	}
	a, c := accM[0]+accM[2], accM[1]+accM[3]
	return hsum8(acc) + (a + c)
}

// ggmlQ5_K models ggml_vec_dot_q5_K_q8_K's AVX2 path (with the scalar
// summs update compiled as a fused multiply-add).
func ggmlQ5_K(nb int, w, act []byte) float32 {
	var acc [8]float32
	var summs float32
	for b := 0; b < nb; b++ {
		x, y := w[176*b:176*(b+1)], act[292*b:292*(b+1)]
		yd := math.Float32frombits(binary.LittleEndian.Uint32(y))
		d, dmin := yd*f16At(x), -yd*f16At(x[2:])
		var sc [8]int32
		var mins int32
		for j := range sc {
			s, m := k4ScaleMin(j, x[4:])
			sc[j] = int32(s)
			mins += int32(m) * (int32(int16(binary.LittleEndian.Uint16(y[260+4*j:]))) + int32(int16(binary.LittleEndian.Uint16(y[262+4*j:]))))
		}
		summs = fma32(dmin, float32(mins), summs)
		var sumi [8]int32
		for j := 0; j < 4; j++ {
			for l := 0; l < 8; l++ {
				var lo, hi int32
				for k := 0; k < 4; k++ {
					i := 4*l + k
					qb, qh := x[48+32*j+i], x[16+i]
					qlo := int32(qb&15 | (qh>>(2*j)&1)<<4)
					qhi := int32(qb>>4 | (qh>>(2*j+1)&1)<<4)
					lo += qlo * int32(int8(y[4+64*j+i]))
					hi += qhi * int32(int8(y[4+64*j+32+i]))
				}
				sumi[l] += sc[2*j]*lo + sc[2*j+1]*hi
			}
		}
		for l := range acc {
			acc[l] = fma32(d, float32(sumi[l]), acc[l])
		}
	}
	return hsum8(acc) + summs
}

// ggmlK16 models the AVX2 paths of ggml_vec_dot_q2_K_q8_K and
// _q3_K_q8_K, whose blocks have sixteen scales of 16 quants: pre (Q2_K's
// mins term) is added to the accumulator before the quants; q returns quant
// e of block x and sc its group scales.
func ggmlK16(nb, bb int, w, act []byte, d func(x []byte) float32, pre func(x, y []byte) (float32, [8]int32),
	q func(x []byte, e int) int32, sc func(x []byte) [16]int32) float32 {
	var acc [8]float32
	for b := 0; b < nb; b++ {
		x, y := w[bb*b:bb*(b+1)], act[292*b:292*(b+1)]
		yd := math.Float32frombits(binary.LittleEndian.Uint32(y))
		if pre != nil {
			dmin, prod := pre(x, y)
			dmin = -yd * dmin
			for l := range acc {
				acc[l] = fma32(dmin, float32(prod[l]), acc[l])
			}
		}
		s := sc(x)
		var sumi [8]int32
		for h := 0; h < 2; h++ {
			for k := 0; k < 4; k++ {
				for l := 0; l < 8; l++ {
					var p int32
					for i := 0; i < 4; i++ {
						e := 128*h + 32*k + 4*l + i
						p += q(x, e) * int32(int8(y[4+e]))
					}
					sumi[l] += s[8*h+2*k+l/4] * p
				}
			}
		}
		dd := yd * d(x)
		for l := range acc {
			acc[l] = fma32(dd, float32(sumi[l]), acc[l])
		}
	}
	return hsum8(acc)
}

func ggmlQ2_K(nb int, w, act []byte) float32 {
	return ggmlK16(nb, 84, w, act,
		func(x []byte) float32 { return f16At(x[80:]) },
		func(x, y []byte) (float32, [8]int32) {
			var prod [8]int32
			for l := range prod {
				for g := 2 * l; g < 2*l+2; g++ {
					prod[l] += int32(x[g]>>4) * int32(int16(binary.LittleEndian.Uint16(y[260+2*g:])))
				}
			}
			return f16At(x[82:]), prod
		},
		func(x []byte, e int) int32 { return int32(x[16+32*(e/128)+e%32]>>(2*(e%128/32))) & 3 },
		func(x []byte) (s [16]int32) {
			for g := range s {
				s[g] = int32(x[g] & 15)
			}
			return s
		})
}

func ggmlQ3_K(nb int, w, act []byte) float32 {
	return ggmlK16(nb, 110, w, act,
		func(x []byte) float32 { return f16At(x[108:]) },
		nil,
		func(x []byte, e int) int32 {
			h, r := e/128, e%128
			j, l := r/32, r%32
			v := int32(x[32+32*h+l]>>(2*j)) & 3
			if x[l]>>(4*h+j)&1 == 0 {
				v -= 4
			}
			return v
		},
		func(x []byte) (s [16]int32) {
			for g := range s {
				s[g] = int32(q3KScale(x[96:], g))
			}
			return s
		})
}

// ggmlQ6_K models ggml_vec_dot_q6_K_q8_K's AVX2 path.
func ggmlQ6_K(nb int, w, act []byte) float32 {
	var acc [8]float32
	for b := 0; b < nb; b++ {
		x, y := w[210*b:210*(b+1)], act[292*b:292*(b+1)]
		d := math.Float32frombits(binary.LittleEndian.Uint32(y)) * f16At(x[208:])
		var sumi [8]int32
		for h := 0; h < 2; h++ {
			for k := 0; k < 4; k++ {
				for l := 0; l < 8; l++ { // lane: quants 4l..4l+3 of the 32
					var s int32
					for i := 0; i < 4; i++ {
						e := 32*k + 4*l + i // index in the half
						ql := x[64*h+e%64]
						if e >= 64 {
							ql >>= 4
						}
						qh := x[128+32*h+e%32] >> (2 * k) & 3
						q := int32(ql&15 | qh<<4)
						s += (q - 32) * int32(int8(y[4+128*h+e]))
					}
					g := 8*h + 2*k + l/4 // scale of this lane's 16 quants
					sumi[l] += int32(int8(x[192+g])) * s
				}
			}
		}
		for l := range acc {
			acc[l] = fma32(d, float32(sumi[l]), acc[l])
		}
	}
	return hsum8(acc)
}

// asmTiers returns the assembly tiers this CPU can run (their kernels
// are checked whether or not the tier is the default).
func asmTiers() []*Tier {
	tiers := []*Tier{avx2Tier}
	if haveAVX512 {
		tiers = append(tiers, avx512Tier)
	}
	return tiers
}

func TestGGMLOrder(t *testing.T) {
	if !hasAVX2() {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(23, 24))
	models := map[quant.Type]func(nb int, w, act []byte) float32{
		quant.Q8_0:   func(nb int, w, act []byte) float32 { return ggmlLegacy(nb, w, 34, act, q8Quants) },
		quant.Q4_0:   func(nb int, w, act []byte) float32 { return ggmlLegacy(nb, w, 18, act, q4Quants) },
		quant.Q5_0:   func(nb int, w, act []byte) float32 { return ggmlLegacy(nb, w, 22, act, q5_0Quants) },
		quant.Q4_1:   func(nb int, w, act []byte) float32 { return ggmlLegacy1(nb, w, 20, act, q4_1Quants) },
		quant.Q5_1:   func(nb int, w, act []byte) float32 { return ggmlLegacy1(nb, w, 24, act, q5_1Quants) },
		quant.IQ4_NL: ggmlIQ4NL,
		quant.Q2_K:   ggmlQ2_K,
		quant.Q3_K:   ggmlQ3_K,
		quant.Q4_K:   ggmlQ4_K,
		quant.Q5_K:   ggmlQ5_K,
		quant.Q6_K:   ggmlQ6_K,
	}
	for typ, model := range models {
		for _, sh := range shapesFor(typ) {
			w := randomRows(r, typ, sh.rows, sh.cols)
			act := randomRows(r, vecDotType[typ], 1, sh.cols)
			rowBytes, _ := quant.RowBytes(typ, sh.cols)
			for _, tier := range asmTiers() {
				out := make([]float32, sh.rows)
				tier.rowsOf(typ)(out, w, rowBytes, sh.cols, act, tier.prepare(typ, nil, act, sh.cols))
				for i := range out {
					want := model(sh.cols/typ.BlockSize(), w[i*rowBytes:(i+1)*rowBytes], act)
					if math.Float32bits(out[i]) != math.Float32bits(want) {
						t.Errorf("%s %v %dx%d row %d: kernel %g, ggml AVX2 order %g", tier.name, typ, sh.rows, sh.cols, i, out[i], want)
					}
				}
			}
		}
	}
}

// TestFloatOrder checks the float kernels of each assembly tier against
// package quant's Dot,
// which follows ggml's AVX2 order for F32, F16 and BF16.
func TestFloatOrder(t *testing.T) {
	if !hasAVX2() {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(25, 26))
	for _, typ := range []quant.Type{quant.F32, quant.F16, quant.BF16} {
		tt, err := quant.Lookup(typ)
		if err != nil {
			t.Skip(err)
		}
		for _, sh := range shapesFor(typ) {
			w := randomRows(r, typ, sh.rows, sh.cols)
			act := randomRows(r, typ, 1, sh.cols)
			rowBytes, _ := quant.RowBytes(typ, sh.cols)
			for _, tier := range asmTiers() {
				out := make([]float32, sh.rows)
				tier.rowsOf(typ)(out, w, rowBytes, sh.cols, act, tier.prepare(typ, nil, act, sh.cols))
				for i := range out {
					want := tt.Dot(sh.cols, w[i*rowBytes:(i+1)*rowBytes], act)
					if math.Float32bits(out[i]) != math.Float32bits(want) {
						t.Errorf("%s %v %dx%d row %d: kernel %g, quant.Dot %g", tier.name, typ, sh.rows, sh.cols, i, out[i], want)
					}
				}
			}
		}
	}
}
