package model

import "math"

// sincosf reproduces glibc's sinf/cosf (the implementation from Arm's
// optimized routines, in its x86-64 FMA build, which glibc selects on CPUs
// with FMA) bit for bit. llama.cpp computes its RoPE angles with them, and
// the correctly rounded float32(math.Sin) differs from them in about 2% of
// the angles a model uses, which is enough to change greedy tokens.
func sincosf(y float32) (sin, cos float32) {
	x := float64(y)
	p := &sincosfTable[0]
	top := abstop12(y)
	switch {
	case top < abstop12(float32(pio4)):
		if top < abstop12(0x1p-12) {
			return y, 1
		}
		return sincosfPoly(x, x*x, p, 0)
	case top < abstop12(120):
		// Fast reduction: n = round(x·2/π) via a scaled truncation.
		r := x * p.hpiInv
		n := int((int32(r) + 0x800000) >> 24)
		x = math.FMA(-float64(n), p.hpi, x)
		s := p.sign[n&3]
		if n&2 != 0 {
			p = &sincosfTable[1]
		}
		return sincosfPoly(x*s, x*x, p, n)
	case top < abstop12(float32(math.Inf(1))):
		xi := math.Float32bits(y)
		sign := int(xi >> 31)
		var n int
		x = reduceLarge(xi, &n)
		s := p.sign[(n+sign)&3]
		if (n+sign)&2 != 0 {
			p = &sincosfTable[1]
		}
		return sincosfPoly(x*s, x*x, p, n)
	}
	nan := y - y
	return nan, nan
}

const (
	pio4 = 0x1.921FB54442D18p-1
	pi63 = 0x1.921FB54442D18p-62 // 2π·2⁻⁶⁴
)

type sincosT struct {
	sign           [4]float64
	hpiInv, hpi    float64
	c0, c1, c2, c3 float64
	c4, s1, s2, s3 float64
}

// sincosfTable holds the polynomial coefficients; the second entry
// computes -cos so that the quadrant's negation comes for free.
var sincosfTable = [2]sincosT{
	{[4]float64{1, -1, -1, 1}, 0x1.45F306DC9C883p+23, 0x1.921FB54442D18p0,
		0x1p0, -0x1.ffffffd0c621cp-2, 0x1.55553e1068f19p-5, -0x1.6c087e89a359dp-10,
		0x1.99343027bf8c3p-16, -0x1.555545995a603p-3, 0x1.1107605230bc4p-7, -0x1.994eb3774cf24p-13},
	{[4]float64{1, -1, -1, 1}, 0x1.45F306DC9C883p+23, 0x1.921FB54442D18p0,
		-0x1p0, 0x1.ffffffd0c621cp-2, -0x1.55553e1068f19p-5, 0x1.6c087e89a359dp-10,
		-0x1.99343027bf8c3p-16, -0x1.555545995a603p-3, 0x1.1107605230bc4p-7, -0x1.994eb3774cf24p-13},
}

// invPio4 is 4/π to 192 bits, 8 new bits per entry.
var invPio4 = [24]uint32{
	0xa2, 0xa2f9, 0xa2f983, 0xa2f9836e,
	0xf9836e4e, 0x836e4e44, 0x6e4e4415, 0x4e441529,
	0x441529fc, 0x1529fc27, 0x29fc2757, 0xfc2757d1,
	0x2757d1f5, 0x57d1f534, 0xd1f534dd, 0xf534ddc0,
	0x34ddc0db, 0xddc0db62, 0xc0db6295, 0xdb629599,
	0x6295993c, 0x95993c43, 0x993c4390, 0x3c439041,
}

func abstop12(x float32) uint32 { return (math.Float32bits(x) >> 20) & 0x7ff }

// sincosfPoly evaluates the sine and cosine polynomials of the reduced
// argument x (x2 = x²) for quadrant n, with the multiply-adds fused as the
// FMA build fuses them.
func sincosfPoly(x, x2 float64, p *sincosT, n int) (sin, cos float32) {
	x4 := x2 * x2
	x3 := x2 * x
	c2 := math.FMA(x2, p.c4, p.c3)
	s1 := math.FMA(x2, p.s3, p.s2)
	c1 := math.FMA(x2, p.c1, p.c0)
	x5 := x3 * x2
	x6 := x4 * x2
	s := math.FMA(x3, p.s1, x)
	c := math.FMA(x4, p.c2, c1)
	sv := float32(math.FMA(x5, s1, s))
	cv := float32(math.FMA(x6, c2, c))
	if n&1 != 0 {
		return cv, sv
	}
	return sv, cv
}

// reduceLarge reduces a float ≥ 120 (bits xi, sign ignored) modulo π/2
// with a 32×96-bit fixed-point multiply by 4/π; it returns the remainder
// in [-π/4, π/4] and stores the quadrant in n.
func reduceLarge(xi uint32, n *int) float64 {
	arr := invPio4[(xi>>26)&15:]
	shift := (xi >> 23) & 7
	xi = (xi & 0xffffff) | 0x800000
	xi <<= shift
	res0 := uint64(xi * arr[0])
	res1 := uint64(xi) * uint64(arr[4])
	res2 := uint64(xi) * uint64(arr[8])
	res0 = (res2 >> 32) | (res0 << 32)
	res0 += res1
	q := (res0 + 1<<61) >> 62
	res0 -= q << 62
	*n = int(q)
	return float64(int64(res0)) * pi63
}
