package quant

import (
	"errors"
	"fmt"
	"math"
)

// QSF's rotated table types QSF_Q2R, QSF_Q3R and QSF_Q4R store a matrix
// whose rows were rotated, block of 64 by block of 64, by the fixed
// orthogonal transform R = H·S/8 (S: a fixed diagonal of signs, H: the
// 64-point Walsh-Hadamard matrix; see Rotate64). Rotation spreads each
// block's outliers over all its elements, so that the rotated weights are
// close to Gaussian, and they are coded with a fixed non-uniform table fit
// to a Gaussian (Lloyd-Max), 4, 8 or 16 levels, scaled per 16-element
// sub-block. Because R is orthogonal, w·x = (R·w)·(R·x): a matrix of these
// types is multiplied with the activation rotated by the same R (once per
// mat-vec, O(n log n)) and converted to Q8_0 (Traits.RotatedInput).
//
// Block layout (64 elements, little endian, byte offsets):
//
//	d:f16@0  sc:u16@2  codes@4
//
// Sub-block k (elements 16k..16k+15) has the scale d·(1+(sc>>4k & 15)).
// The codes are packed as QSF_Q2A's, QSF_Q3A's and QSF_Q4A's (2, 3 or 4
// bits: 20, 28 or 36 bytes a block, 2.5, 3.5 and 4.5 bits per weight), and
// element j of sub-block k decodes (in the rotated domain) to
// d·(1+sc_k)·T[code_j], with the int8 tables T below. Dequantize returns
// the weights rotated back (Rᵀ), so the embeddings and the quality report
// see the original weights.

// QSF's rotated table types.
const (
	QSF_Q2R Type = 0x8003 // 2-bit table codes of rotated rows, blocks of 64
	QSF_Q3R Type = 0x8004 // 3-bit table codes of rotated rows, blocks of 64
	QSF_Q4R Type = 0x8005 // 4-bit table codes of rotated rows, blocks of 64
)

// The code tables: Lloyd-Max quantizers of a unit Gaussian (2, 3 and 4
// bits), scaled so that the largest level is 127.
var (
	tableQ2R = [4]int8{-127, -38, 38, 127}
	tableQ3R = [8]int8{-127, -79, -45, -14, 14, 45, 79, 127}
	tableQ4R = [16]int8{-127, -96, -75, -58, -44, -31, -18, -6, 6, 18, 31, 44, 58, 75, 96, 127}
)

// Table returns the int8 code table of a rotated table type (nil for
// other types): code c of an element decodes to scale·Table(t)[c].
func Table(t Type) []int8 {
	switch t {
	case QSF_Q2R:
		return tableQ2R[:]
	case QSF_Q3R:
		return tableQ3R[:]
	case QSF_Q4R:
		return tableQ4R[:]
	}
	return nil
}

// rotSigns is S: element j of every 64-block is negated when bit j of
// rotSigns is set.
const rotSigns uint64 = 0x9E3779B97F4A7C15

// Rotate64 replaces each 64-element block b of x (len(x) must be a
// multiple of 64) by R·b = H·S·b/8, in float32: the signs, then the
// butterflies of the fast Walsh-Hadamard transform (spans 1, 2, 4, …, 32,
// each pair (a, b) becoming (a+b, a−b)), then the exact scaling by 1/8.
// It is the transform a rotated type's activation goes through.
func Rotate64(x []float32) {
	for o := 0; o+qkA <= len(x); o += qkA {
		b := (*[qkA]float32)(x[o : o+qkA])
		for j := range b {
			if rotSigns>>j&1 != 0 {
				b[j] = -b[j]
			}
		}
		fwht64(b)
		for j := range b {
			b[j] *= 0.125
		}
	}
}

// unrotate64 is the inverse of Rotate64: Rᵀ·b = S·H·b/8 per block.
func unrotate64(x []float32) {
	for o := 0; o+qkA <= len(x); o += qkA {
		b := (*[qkA]float32)(x[o : o+qkA])
		fwht64(b)
		for j := range b {
			b[j] *= 0.125
			if rotSigns>>j&1 != 0 {
				b[j] = -b[j]
			}
		}
	}
}

func fwht64(b *[qkA]float32) {
	for h := 1; h < qkA; h *= 2 {
		for i := 0; i < qkA; i += 2 * h {
			for j := i; j < i+h; j++ {
				x, y := b[j], b[j+h]
				b[j], b[j+h] = x+y, x-y
			}
		}
	}
}

func init() {
	for _, r := range []rot{{QSF_Q2R, 2, 20}, {QSF_Q3R, 3, 28}, {QSF_Q4R, 4, 36}} {
		typeNames[r.t] = r.t.rotName()
		layouts[r.t] = layout{qkA, r.bytes}
		register(&Traits{Type: r.t, BlockSize: qkA, BlockBytes: r.bytes, VecDot: Q8_0, RotatedInput: true,
			Dequantize: r.dequantize, Quantize: r.quantize, QuantizeImportance: r.quantizeImportance, Dot: r.dot})
	}
}

func (t Type) rotName() string {
	return [...]string{"QSF_Q2R", "QSF_Q3R", "QSF_Q4R"}[t-QSF_Q2R]
}

// rot describes one rotated table type.
type rot struct {
	t     Type
	bits  int
	bytes int
}

func (r rot) asym() asym { return asym(r) }

func (r rot) table() []int8 { return Table(r.t) }

// decode writes the 64 values of block b in the rotated domain.
func (r rot) decode(dst *[qkA]float32, b []byte) {
	var q [qkA]uint8
	r.asym().codes(&q, b)
	d, sc, tab := f16(b), uint16(b[2])|uint16(b[3])<<8, r.table()
	for j, c := range q {
		m := int32(sc>>(4*(j/16))&15) + 1
		dst[j] = float32(d * float32(m*int32(tab[c])))
	}
}

func (r rot) dequantize(dst []float32, src []byte) {
	for i := 0; i < len(dst)/qkA; i++ {
		r.decode((*[qkA]float32)(dst[i*qkA:(i+1)*qkA]), src[i*r.bytes:])
	}
	unrotate64(dst[:len(dst)/qkA*qkA])
}

// dot is the reference dot product of a row with a Q8_0 activation that
// was rotated by Rotate64 before it was quantized. Each block contributes
// one float step per 32-element half h: with dₕ = d·dₐₕ (dₐₕ the scale of
// the activation block under half h) and Iₕ the exact integer
//
//	Iₕ = Σ_{k=2h,2h+1} (1+sc_k)·Σ_{j∈sub-block k} T[code_j]·qₐⱼ
//
// (the table values times their activation quants, summed per 16-element
// sub-block and scaled by its multiplier), the two float32 accumulators
// go through the blocks in order,
//
//	accₕ += dₕ·float(Iₕ)
//
// each product and sum rounded to float32 (no fused multiply-add), and
// the result is acc₀+acc₁. |Iₕ| ≤ 2·16·16·127·128 < 2²⁴, so float(Iₕ) is
// exact, and the integer sums may be formed in any order: a kernel keeps
// them in integer lanes and takes one float step per half block.
func (r rot) dot(n int, w, act []byte) float32 {
	var acc [2]float32
	var v [qkA]int32
	var tab [16]int32
	for i, t := range r.table() {
		tab[i] = int32(t)
	}
	nb := n / qkA
	w, act = w[:nb*r.bytes], act[:nb*68]
	for i := 0; i < nb; i++ {
		b := w[i*r.bytes : (i+1)*r.bytes]
		r.values(&v, &tab, b)
		d, sc := f16(b), uint32(b[2])|uint32(b[3])<<8
		for h := range acc {
			y := (*[34]byte)(act[i*68+34*h:])
			x := (*[32]int32)(v[32*h:])
			var s [2]int32
			for j := range x {
				s[j/16] += x[j] * int32(int8(y[2+j]))
			}
			m0 := int32(sc>>(8*h)&15) + 1
			m1 := int32(sc>>(8*h+4)&15) + 1
			dh := float32(d * f16(y[0:]))
			acc[h] += float32(dh * float32(m0*s[0]+m1*s[1]))
		}
	}
	return acc[0] + acc[1]
}

// values writes the table values of block b's 64 codes to v.
func (r rot) values(v *[qkA]int32, tab *[16]int32, b []byte) {
	switch r.bits {
	case 4:
		q := (*[32]byte)(b[4:36])
		for j, c := range q {
			v[j], v[32+j] = tab[c&15], tab[c>>4]
		}
	default:
		q := (*[16]byte)(b[4:20])
		var hi [qkA]uint8
		if r.bits == 3 {
			qh := (*[8]byte)(b[20:28])
			for j := range hi {
				hi[j] = qh[j/8] >> (j % 8) & 1 << 2
			}
		}
		for j, c := range q {
			v[j] = tab[c&3|hi[j]]
			v[16+j] = tab[c>>2&3|hi[16+j]]
			v[32+j] = tab[c>>4&3|hi[32+j]]
			v[48+j] = tab[c>>6|hi[48+j]]
		}
	}
}

func (r rot) quantize(dst []byte, src []float32) { r.quantizeImportance(dst, src, nil) }

// quantizeImportance rotates each block of src and codes it. The
// importance of the rotated elements of a block is the block's mean
// importance (the diagonal of R·diag(e)·Rᵀ), the same for all of them,
// so a per-column importance does not change the result: only a full
// second moment does (QuantizeGPTQ).
func (r rot) quantizeImportance(dst []byte, src, _ []float32) {
	var x [qkA]float32
	var xf, w [qkA]float64
	for j := range w {
		w[j] = 1
	}
	for i := 0; i < len(src)/qkA; i++ {
		copy(x[:], src[i*qkA:])
		Rotate64(x[:])
		for j, v := range x {
			xf[j] = float64(v)
		}
		b := dst[i*r.bytes : (i+1)*r.bytes]
		p := r.fit(xf[:], w[:])
		var q [qkA]uint8
		for j, v := range xf {
			q[j] = p.code(j, v)
		}
		r.store(b, p, &q)
	}
}

// rotParams are the scales of one block: d and the sub-block multipliers.
type rotParams struct {
	d   float32
	m   [4]int32 // 1..16
	tab []int8
}

// code returns the code of element j whose value is v (rotated domain):
// the table level nearest to v/scale.
func (p *rotParams) code(j int, v float64) uint8 {
	s := float64(p.d) * float64(p.m[j/16])
	if s == 0 {
		return uint8(len(p.tab) / 2)
	}
	return nearestLevel(p.tab, v/s)
}

// value returns the value code c of element j decodes to, as decode does.
func (p *rotParams) value(j int, c uint8) float64 {
	return float64(float32(p.d * float32(p.m[j/16]*int32(p.tab[c]))))
}

func nearestLevel(tab []int8, y float64) uint8 {
	lo, hi := 0, len(tab)-1
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if float64(tab[mid]) <= y {
			lo = mid
		} else {
			hi = mid
		}
	}
	if math.Abs(float64(tab[lo])-y) <= math.Abs(float64(tab[hi])-y) {
		return uint8(lo)
	}
	return uint8(hi)
}

func (r rot) store(b []byte, p rotParams, q *[qkA]uint8) {
	r.asym().pack(b, q)
	put16(b, FP32ToFP16(p.d))
	var sc uint16
	for k, m := range p.m {
		sc |= uint16(m-1) << (4 * k)
	}
	b[2], b[3] = byte(sc), byte(sc>>8)
}

// fit chooses the scales of one block of rotated values x minimising the
// w-weighted squared error: a least-squares scale per sub-block (searched
// around the one that maps its largest value to the largest level), then
// d and the 4-bit multipliers, trying a few d around the largest
// sub-block scale over 16.
func (r rot) fit(x, w []float64) rotParams {
	tab := r.table()
	var s [4]float64
	smax := 0.0
	for k := range s {
		s[k] = bestTableScale(x[16*k:16*k+16], w[16*k:16*k+16], tab)
		smax = max(smax, s[k])
	}
	best := rotParams{tab: tab, m: [4]int32{1, 1, 1, 1}}
	if smax == 0 {
		return best
	}
	bestErr := math.Inf(1)
	for _, beta := range [...]float64{0.85, 0.9, 0.95, 1, 1.05} {
		d := FP16ToFP32(FP32ToFP16(float32(smax / 16 * beta)))
		if !(d > 0) || math.IsInf(float64(d), 0) {
			continue
		}
		p := rotParams{d: d, tab: tab}
		var e float64
		for k := range s {
			be, bm := math.Inf(1), int32(1)
			for m := int32(1); m <= 16; m++ {
				p.m[k] = m
				var ee float64
				for j := 16 * k; j < 16*k+16; j++ {
					d := p.value(j, p.code(j, x[j])) - x[j]
					ee += float64(w[j] * float64(d*d))
				}
				if ee < be {
					be, bm = ee, m
				}
			}
			p.m[k] = bm
			e += be
		}
		if e < bestErr {
			bestErr, best = e, p
		}
	}
	return best
}

// bestTableScale returns the scale s minimising Σ w(s·T[c]−x)² for the
// codes nearest to x/s, searched around max|x| / max T.
func bestTableScale(x, w []float64, tab []int8) float64 {
	amax := 0.0
	for _, v := range x {
		amax = max(amax, math.Abs(v))
	}
	if amax == 0 {
		return 0
	}
	base := amax / float64(tab[len(tab)-1])
	best, bestErr := base, math.Inf(1)
	for k := -10; k <= 10; k++ {
		s := base * (1 + float64(0.04*float64(k)))
		var num, den float64
		for j, v := range x {
			t := float64(tab[nearestLevel(tab, v/s)])
			num += float64(w[j] * float64(v*t))
			den += float64(w[j] * float64(t*t))
		}
		if den > 0 && num > 0 {
			s = num / den
		}
		var e float64
		for j, v := range x {
			d := float64(s*float64(tab[nearestLevel(tab, v/s)])) - v
			e += float64(w[j] * float64(d*d))
		}
		if e < bestErr {
			best, bestErr = s, e
		}
	}
	return best
}

// ErrGPTQ is returned by QuantizeGPTQ for arguments it cannot use: a type
// without GPTQ support, mismatched lengths or a second moment that is not
// finite.
var ErrGPTQ = errors.New("quant: GPTQ")

// GPTQDamp is the damping QuantizeGPTQ adds to the diagonal of the second
// moment, as a fraction of its mean diagonal.
const GPTQDamp = 0.01

// QuantizeGPTQ quantizes the rows×cols matrix w (row-major) into dst, which
// must hold rows rows of t, minimising the error of the products with the
// calibration inputs rather than that of the weights: gram is the mean
// x·xᵀ of the matrix's inputs (cols×cols, row-major; see
// qsf.Model.ActivationGram). Columns are coded one at a time, and each
// column's rounding error is fed forward to the columns not yet coded
// through the inverse of the damped second moment (GPTQ, Frantar et al.
// 2022); a block's scales are chosen when its first column is reached,
// from the weights as updated so far. t must be a rotated table type
// (the second moment is rotated with the weights) or an asymmetric one.
func QuantizeGPTQ(t Type, dst []byte, w []float32, rows, cols int, gram []float64) error {
	rowBytes, err := RowBytes(t, cols)
	if err != nil {
		return err
	}
	if len(w) != rows*cols || len(gram) != cols*cols || len(dst) != rows*rowBytes {
		return fmt.Errorf("%w: %d weights, %d second moments and %d bytes for a %d×%d %v matrix", ErrGPTQ, len(w), len(gram), len(dst), rows, cols, t)
	}
	var r rot
	switch t {
	case QSF_Q2R, QSF_Q3R, QSF_Q4R:
		r = rot{t, map[Type]int{QSF_Q2R: 2, QSF_Q3R: 3, QSF_Q4R: 4}[t], layouts[t].blockBytes}
	default:
		return fmt.Errorf("%w: type %v", ErrGPTQ, t)
	}
	for _, v := range gram {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: second moment not finite", ErrGPTQ)
		}
	}
	// Rotate the rows of w and both sides of the second moment.
	W := make([]float64, len(w))
	row := make([]float32, cols)
	for i := 0; i < rows; i++ {
		copy(row, w[i*cols:(i+1)*cols])
		Rotate64(row)
		for j, v := range row {
			W[i*cols+j] = float64(v)
		}
	}
	H := rotateGram(gram, cols)
	diag := make([]float64, cols)
	for i := range diag {
		diag[i] = H[i*cols+i]
	}
	U, ok := gptqFactor(H, cols)
	if !ok {
		return fmt.Errorf("%w: second moment not positive definite", ErrGPTQ)
	}
	params := make([]rotParams, rows)
	codes := make([][qkA]uint8, rows)
	for c := 0; c < cols; c++ {
		blk, j := c/qkA, c%qkA
		if j == 0 {
			for i := 0; i < rows; i++ {
				params[i] = r.fit(W[i*cols+c:i*cols+c+qkA], diag[c:c+qkA])
			}
		}
		u := U[c*cols : (c+1)*cols]
		for i := 0; i < rows; i++ {
			wr := W[i*cols : (i+1)*cols]
			v := wr[c]
			code := params[i].code(j, v)
			codes[i][j] = code
			e := (v - params[i].value(j, code)) / u[c]
			for k := c + 1; k < cols; k++ {
				wr[k] -= float64(e * u[k])
			}
		}
		if j == qkA-1 {
			for i := 0; i < rows; i++ {
				r.store(dst[i*rowBytes+blk*r.bytes:], params[i], &codes[i])
			}
		}
	}
	return nil
}

// rotateGram returns R·G·Rᵀ for the block-diagonal rotation R of Rotate64
// (in float64).
func rotateGram(g []float64, n int) []float64 {
	h := append([]float64(nil), g...)
	v := make([]float64, n)
	rot64 := func(v []float64) {
		for o := 0; o+qkA <= len(v); o += qkA {
			b := v[o : o+qkA]
			for j := range b {
				if rotSigns>>j&1 != 0 {
					b[j] = -b[j]
				}
			}
			for s := 1; s < qkA; s *= 2 {
				for i := 0; i < qkA; i += 2 * s {
					for j := i; j < i+s; j++ {
						x, y := b[j], b[j+s]
						b[j], b[j+s] = x+y, x-y
					}
				}
			}
			for j := range b {
				b[j] *= 0.125
			}
		}
	}
	for i := 0; i < n; i++ {
		rot64(h[i*n : (i+1)*n])
	}
	for j := 0; j < n; j++ {
		for i := 0; i < n; i++ {
			v[i] = h[i*n+j]
		}
		rot64(v)
		for i := 0; i < n; i++ {
			h[i*n+j] = v[i]
		}
	}
	return h
}

// gptqFactor damps H (columns never activated get a unit diagonal) and
// returns the upper Cholesky factor U of its inverse (H⁻¹ = UᵀU).
func gptqFactor(H []float64, n int) ([]float64, bool) {
	var mean float64
	for i := 0; i < n; i++ {
		mean += H[i*n+i]
	}
	mean /= float64(n)
	if !(mean > 0) {
		mean = 1
	}
	for i := 0; i < n; i++ {
		if H[i*n+i] <= 1e-12*mean {
			for j := 0; j < n; j++ {
				H[i*n+j], H[j*n+i] = 0, 0
			}
			H[i*n+i] = 1
		}
		H[i*n+i] += float64(GPTQDamp * mean)
	}
	L, ok := cholesky(H, n)
	if !ok {
		return nil, false
	}
	// Linv = L⁻¹ (lower), H⁻¹ = Linvᵀ·Linv.
	Linv := make([]float64, n*n)
	for i := 0; i < n; i++ {
		Linv[i*n+i] = 1 / L[i*n+i]
		for j := 0; j < i; j++ {
			var s float64
			for k := j; k < i; k++ {
				s += float64(L[i*n+k] * Linv[k*n+j])
			}
			Linv[i*n+j] = -s / L[i*n+i]
		}
	}
	inv := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			var s float64
			for k := i; k < n; k++ {
				s += float64(Linv[k*n+i] * Linv[k*n+j])
			}
			inv[i*n+j], inv[j*n+i] = s, s
		}
	}
	L2, ok := cholesky(inv, n)
	if !ok {
		return nil, false
	}
	U := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			U[j*n+i] = L2[i*n+j]
		}
	}
	return U, true
}

// cholesky returns the lower factor L of A = L·Lᵀ.
func cholesky(A []float64, n int) ([]float64, bool) {
	L := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			s := A[i*n+j]
			for k := 0; k < j; k++ {
				s -= float64(L[i*n+k] * L[j*n+k])
			}
			if i == j {
				if !(s > 0) {
					return nil, false
				}
				L[i*n+i] = math.Sqrt(s)
			} else {
				L[i*n+j] = s / L[j*n+j]
			}
		}
	}
	return L, true
}
