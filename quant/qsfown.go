package quant

import "math"

// QSF's own types (codes 0x8000 and above, never ggml's): asymmetric
// uniform 2-, 3- and 4-bit codes in blocks of 64 elements, each block with
// an fp16 scale d and an fp16 offset m, so that element j decodes to
// d·q_j + m. They pair with Q8_1 activations: per 32-element activation
// block, Σ(d·q+m)·a = d·dₐ·Σq·qₐ + m·sₐ, with sₐ = dₐ·Σqₐ stored in Q8_1.
//
// Block layouts (little endian, byte offsets):
//
//	QSF_Q2A  d@0 m@2 qs[16]@4: element 16k+j is bits 2k..2k+1 of qs[j]
//	         (20 bytes, 2.5 bits per weight)
//	QSF_Q3A  d@0 m@2 ql[16]@4 as QSF_Q2A's qs (the low 2 bits),
//	         qh[8]@20: the high bit of element j is bit j%8 of qh[j/8]
//	         (28 bytes, 3.5 bits per weight)
//	QSF_Q4A  d@0 m@2 qs[32]@4: element j is the low nibble of qs[j],
//	         element 32+j its high nibble (36 bytes, 4.5 bits per weight)
//
// The quantizer (QuantizeImportance) chooses d and m per block to minimise
// the importance-weighted squared error Σ wⱼ(d·qⱼ+m−xⱼ)², with wⱼ the
// activation energy of column j when calibration data gives one and 1
// otherwise: it tries a range of grid spacings, fits d and m by weighted
// least squares for each, reassigns the codes and refits, and finally
// assigns the codes against the fp16-rounded d and m that are stored.

// QSF's own tensor types.
const (
	QSF_Q2A Type = 0x8000 // 2-bit asymmetric, blocks of 64
	QSF_Q3A Type = 0x8001 // 3-bit asymmetric, blocks of 64
	QSF_Q4A Type = 0x8002 // 4-bit asymmetric, blocks of 64
)

// qkA is the block size of the QSF asymmetric types.
const qkA = 64

func init() {
	for t, name := range map[Type]string{QSF_Q2A: "QSF_Q2A", QSF_Q3A: "QSF_Q3A", QSF_Q4A: "QSF_Q4A"} {
		typeNames[t] = name
	}
	layouts[QSF_Q2A] = layout{qkA, 20}
	layouts[QSF_Q3A] = layout{qkA, 28}
	layouts[QSF_Q4A] = layout{qkA, 36}
	for _, a := range []asym{{QSF_Q2A, 2, 20}, {QSF_Q3A, 3, 28}, {QSF_Q4A, 4, 36}} {
		register(&Traits{Type: a.t, BlockSize: qkA, BlockBytes: a.bytes, VecDot: Q8_1,
			Dequantize: a.dequantize, Quantize: a.quantize, QuantizeImportance: a.quantizeImportance, Dot: a.dot})
	}
}

// asym describes one of the asymmetric types: its code width in bits and
// bytes per block.
type asym struct {
	t     Type
	bits  int
	bytes int
}

// codes writes the 64 codes of block b in element order.
func (a asym) codes(q *[qkA]uint8, b []byte) {
	switch a.bits {
	case 2, 3:
		for k := 0; k < 4; k++ {
			for j := 0; j < 16; j++ {
				q[16*k+j] = b[4+j] >> (2 * k) & 3
			}
		}
		if a.bits == 3 {
			for j := 0; j < qkA; j++ {
				q[j] |= (b[20+j/8] >> (j % 8) & 1) << 2
			}
		}
	case 4:
		for j := 0; j < 32; j++ {
			q[j] = b[4+j] & 0xF
			q[32+j] = b[4+j] >> 4
		}
	}
}

// pack stores the 64 codes q into block b (after d and m).
func (a asym) pack(b []byte, q *[qkA]uint8) {
	clear(b[4:a.bytes])
	switch a.bits {
	case 2, 3:
		for j := 0; j < qkA; j++ {
			b[4+j%16] |= (q[j] & 3) << (2 * (j / 16))
		}
		if a.bits == 3 {
			for j := 0; j < qkA; j++ {
				b[20+j/8] |= (q[j] >> 2 & 1) << (j % 8)
			}
		}
	case 4:
		for j := 0; j < 32; j++ {
			b[4+j] = q[j] | q[32+j]<<4
		}
	}
}

func (a asym) dequantize(dst []float32, src []byte) {
	var q [qkA]uint8
	for i := 0; i < len(dst)/qkA; i++ {
		b := src[i*a.bytes:]
		a.codes(&q, b)
		d, m := f16(b), f16(b[2:])
		for j, c := range q {
			dst[i*qkA+j] = float32(d*float32(c)) + m
		}
	}
}

// dot is the reference dot product with a Q8_1 activation: for each
// 32-element half of a block, in order, sum += (d·dₐ)·Σq·qₐ + m·sₐ in
// float32, the products rounded before the additions. (The integer sums
// are exact, so the order they are formed in does not matter.)
func (a asym) dot(n int, w, act []byte) float32 {
	var sum float32
	for i := 0; i < n/qkA; i++ {
		b := w[i*a.bytes : (i+1)*a.bytes]
		y0 := act[2*i*36 : 2*i*36+36]
		y1 := act[(2*i+1)*36 : (2*i+1)*36+36]
		var s0, s1 int32
		switch a.bits {
		case 2:
			s0, s1 = dot2(b[4:20], y0[4:36], y1[4:36])
		case 3:
			s0, s1 = dot2(b[4:20], y0[4:36], y1[4:36])
			h0, h1 := dotHigh(b[20:28], y0[4:36], y1[4:36])
			s0 += 4 * h0
			s1 += 4 * h1
		case 4:
			s0, s1 = dot4(b[4:36], y0[4:36], y1[4:36])
		}
		d, m := f16(b), f16(b[2:])
		sum += float32(d*f16(y0)*float32(s0)) + float32(m*f16(y0[2:]))
		sum += float32(d*f16(y1)*float32(s1)) + float32(m*f16(y1[2:]))
	}
	return sum
}

// dot2 returns the integer dot products of the 2-bit codes of qs (16
// bytes) with the quants of the two halves y0 and y1 (32 bytes each).
func dot2(qs, y0, y1 []byte) (s0, s1 int32) {
	qs, y0, y1 = qs[:16], y0[:32], y1[:32]
	for j := 0; j < 16; j++ {
		q := int32(qs[j])
		s0 += (q&3)*int32(int8(y0[j])) + (q>>2&3)*int32(int8(y0[16+j]))
		s1 += (q>>4&3)*int32(int8(y1[j])) + (q>>6)*int32(int8(y1[16+j]))
	}
	return s0, s1
}

// dotHigh returns the dot products of the high (third) bits of QSF_Q3A's
// codes, qh (8 bytes), with the two halves y0 and y1.
func dotHigh(qh, y0, y1 []byte) (s0, s1 int32) {
	qh, y0, y1 = qh[:8], y0[:32], y1[:32]
	for k := 0; k < 4; k++ {
		h0, h1 := int32(qh[k]), int32(qh[4+k])
		a, b := y0[8*k:8*k+8], y1[8*k:8*k+8]
		for bit := 0; bit < 8; bit++ {
			s0 += (h0 >> bit & 1) * int32(int8(a[bit]))
			s1 += (h1 >> bit & 1) * int32(int8(b[bit]))
		}
	}
	return s0, s1
}

// dot4 returns the integer dot products of the 4-bit codes of qs (32
// bytes) with the two halves y0 and y1.
func dot4(qs, y0, y1 []byte) (s0, s1 int32) {
	qs, y0, y1 = qs[:32], y0[:32], y1[:32]
	for j := 0; j < 32; j++ {
		s0 += int32(qs[j]&0xF) * int32(int8(y0[j]))
		s1 += int32(qs[j]>>4) * int32(int8(y1[j]))
	}
	return s0, s1
}

func (a asym) quantize(dst []byte, src []float32) { a.quantizeImportance(dst, src, nil) }

// quantizeImportance quantizes src with per-element importance weights
// (nil or all zero in a block: uniform).
func (a asym) quantizeImportance(dst []byte, src, importance []float32) {
	nmax := 1<<a.bits - 1
	var q [qkA]uint8
	var w [qkA]float64
	for i := 0; i < len(src)/qkA; i++ {
		x := src[i*qkA : i*qkA+qkA]
		b := dst[i*a.bytes : (i+1)*a.bytes]
		var sw float64
		if importance != nil {
			for j := range w {
				w[j] = float64(importance[i*qkA+j])
				sw += w[j]
			}
		}
		if !(sw > 0) || math.IsInf(sw, 0) {
			for j := range w {
				w[j] = 1
			}
		}
		d, m := fitAsym(x, w[:], nmax, q[:])
		put16(b, FP32ToFP16(d))
		put16(b[2:], FP32ToFP16(m))
		assignCodes(x, f16(b), f16(b[2:]), nmax, q[:])
		a.pack(b, &q)
	}
}

// assignCodes sets q[j] to the code in [0, nmax] whose value d·q+m is
// nearest to x[j].
func assignCodes(x []float32, d, m float32, nmax int, q []uint8) {
	for j, v := range x {
		c := 0
		if d != 0 {
			c = int(math.RoundToEven(float64((v - m) / d)))
		}
		q[j] = uint8(min(max(c, 0), nmax))
	}
}

// fitAsym returns the scale d and offset m that minimise
// Σ w[j]·(d·q[j]+m−x[j])² over the grid spacings it tries, leaving the
// codes in q. The error is measured with d and m rounded to fp16, as
// they are stored.
func fitAsym(x []float32, w []float64, nmax int, q []uint8) (float32, float32) {
	lo, hi := x[0], x[0]
	for _, v := range x {
		lo, hi = min(lo, v), max(hi, v)
	}
	if hi == lo || math.IsNaN(float64(hi-lo)) {
		return 0, lo
	}
	bestD, bestM := (hi-lo)/float32(nmax), lo
	bestErr := weightedErr(x, w, bestD, bestM, nmax, q)
	const nstep = 24
	for is := 0; is <= nstep; is++ {
		// Grid spacings from (hi-lo)/(nmax-0.6) to (hi-lo)/(nmax+1.8).
		iscale := (float32(nmax) - 0.6 + 2.4*float32(is)/nstep) / (hi - lo)
		for j, v := range x {
			q[j] = uint8(min(max(int(math.RoundToEven(float64(iscale*(v-lo)))), 0), nmax))
		}
		for iter := 0; iter < 3; iter++ {
			d, m, ok := lsFit(x, w, q)
			if !ok {
				break
			}
			d, m = FP16ToFP32(FP32ToFP16(d)), FP16ToFP32(FP32ToFP16(m))
			e := weightedErr(x, w, d, m, nmax, q) // reassigns q
			if e < bestErr {
				bestErr, bestD, bestM = e, d, m
			}
		}
	}
	return bestD, bestM
}

// lsFit solves the weighted least-squares problem for d and m given codes.
func lsFit(x []float32, w []float64, q []uint8) (d, m float32, ok bool) {
	var sw, sl, sll, sx, slx float64
	for j, v := range x {
		l := float64(q[j])
		sw += w[j]
		sl += float64(w[j] * l)
		sll += float64(w[j] * l * l)
		sx += float64(w[j] * float64(v))
		slx += float64(w[j] * l * float64(v))
	}
	det := float64(sw*sll) - float64(sl*sl)
	if !(det > 0) {
		return 0, 0, false
	}
	return float32((float64(sw*slx) - float64(sl*sx)) / det), float32((float64(sll*sx) - float64(sl*slx)) / det), true
}

// weightedErr assigns the codes for d and m into q and returns the
// weighted squared error of the result.
func weightedErr(x []float32, w []float64, d, m float32, nmax int, q []uint8) float64 {
	assignCodes(x, d, m, nmax, q)
	var e float64
	for j, v := range x {
		r := float64(float32(d*float32(q[j]))+m) - float64(v)
		e += float64(w[j] * r * r)
	}
	return e
}
