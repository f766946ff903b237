package quant

// Ternary types (BitNet b1.58, TriLMs): weights in {-1, 0, +1} times one
// fp16 scale per 256-element block, d = max|x| of the block (the
// reference quantizers; QuantizeImportance fits d and the zeros instead,
// ternaryfit.go). Both pair with Q8_K activations.
//
// Block layouts (little endian, byte offsets):
//
//	TQ1_0  qs[48]@0 (5 trits per byte, base 3, scaled to 0..255) qh[4]@48
//	       (4 trits per byte) d@52
//	TQ2_0  qs[64]@0 (4 2-bit codes per byte, code = value+1) d@64
//
// TQ1_0 stores five trits t0..t4 (value+1, 0..2) as the byte
// ceil((t0·81+t1·27+t2·9+t3·3+t4)·256/243); trit n of byte q is
// ((q·3ⁿ mod 256)·3) >> 8. Elements: byte m of qs[0:32] holds elements
// m+32n (n = 0..4), byte m of qs[32:48] holds 160+m+16n, byte j of qh
// holds 240+j+4n (n = 0..3, the fifth trit unused). TQ2_0: element
// 128h+32n+m is bits 2n..2n+1 of qs[32h+m].

// Trits per TQ1_0 byte and powers of 3 that select one of them.
var pow3 = [6]uint8{1, 3, 9, 27, 81, 243}

func init() {
	register(&Traits{Type: TQ1_0, BlockSize: qkK, BlockBytes: 54, VecDot: Q8_K,
		Dequantize: dequantTQ1_0, Quantize: quantTQ1_0, QuantizeImportance: quantTQ1_0Importance, Dot: dotTQ1_0})
	register(&Traits{Type: TQ2_0, BlockSize: qkK, BlockBytes: 66, VecDot: Q8_K,
		Dequantize: dequantTQ2_0, Quantize: quantTQ2_0, QuantizeImportance: quantTQ2_0Importance, Dot: dotTQ2_0})
}

// trit returns digit n (0..4, most significant first) of a TQ1_0 byte:
// 0, 1 or 2 for -1, 0, +1.
func trit(q uint8, n int) int32 {
	return int32((uint16(q*pow3[n]) * 3) >> 8)
}

// tq1Codes writes the 256 codes (0..2) of one TQ1_0 block in element order.
func tq1Codes(c *[qkK]int32, b []byte) {
	for n := 0; n < 5; n++ {
		for m := 0; m < 32; m++ {
			c[32*n+m] = trit(b[m], n)
		}
		for m := 0; m < 16; m++ {
			c[160+16*n+m] = trit(b[32+m], n)
		}
	}
	for n := 0; n < 4; n++ {
		for j := 0; j < 4; j++ {
			c[240+4*n+j] = trit(b[48+j], n)
		}
	}
}

// tq2Codes writes the 256 codes (0..3; 3 does not occur in valid data) of
// one TQ2_0 block in element order.
func tq2Codes(c *[qkK]int32, b []byte) {
	for h := 0; h < 2; h++ {
		for n := 0; n < 4; n++ {
			for m := 0; m < 32; m++ {
				c[128*h+32*n+m] = int32(b[32*h+m]>>(2*n)) & 3
			}
		}
	}
}

func dequantTQ1_0(dst []float32, src []byte) {
	var c [qkK]int32
	for i := 0; i < len(dst)/qkK; i++ {
		b := src[i*54:]
		tq1Codes(&c, b)
		d := f16(b[52:])
		for e, q := range c {
			dst[i*qkK+e] = float32(q-1) * d
		}
	}
}

func dequantTQ2_0(dst []float32, src []byte) {
	var c [qkK]int32
	for i := 0; i < len(dst)/qkK; i++ {
		b := src[i*66:]
		tq2Codes(&c, b)
		d := f16(b[64:])
		for e, q := range c {
			dst[i*qkK+e] = float32(q-1) * d
		}
	}
}

// ternaryScale returns d = max|x| and its inverse (0 for an all-zero
// block) as quantize_row_tq*_ref computes them.
func ternaryScale(x []float32) (d, id float32) {
	for _, v := range x {
		if a := abs32(v); a > d {
			d = a
		}
	}
	if d != 0 {
		id = 1 / d
	}
	return d, id
}

// ternaryCode is lroundf(x·id) + 1: 0, 1 or 2 for data scaled by its
// block maximum.
func ternaryCode(x, id float32) int { return int(roundAway(x*id)) + 1 }

// quantTQ1_0 is quantize_row_tq1_0_ref.
func quantTQ1_0(dst []byte, src []float32) {
	for i := 0; i < len(src)/qkK; i++ {
		x := src[i*qkK : i*qkK+qkK]
		b := dst[i*54 : i*54+54]
		d, id := ternaryScale(x)
		put16(b[52:], FP32ToFP16(d))
		pack := func(base, stride, count int) uint8 {
			var q uint8
			for n := 0; n < count; n++ {
				q = q*3 + uint8(ternaryCode(x[base+n*stride], id))
			}
			return q
		}
		ceil243 := func(q uint8) uint8 { return uint8((uint16(q)*256 + 242) / 243) }
		for m := 0; m < 32; m++ {
			b[m] = ceil243(pack(m, 32, 5))
		}
		for m := 0; m < 16; m++ {
			b[32+m] = ceil243(pack(160+m, 16, 5))
		}
		for j := 0; j < 4; j++ {
			b[48+j] = ceil243(pack(240+j, 4, 4) * 3)
		}
	}
}

// quantTQ2_0 is quantize_row_tq2_0_ref.
func quantTQ2_0(dst []byte, src []float32) {
	for i := 0; i < len(src)/qkK; i++ {
		x := src[i*qkK : i*qkK+qkK]
		b := dst[i*66 : i*66+66]
		d, id := ternaryScale(x)
		put16(b[64:], FP32ToFP16(d))
		for h := 0; h < 2; h++ {
			for m := 0; m < 32; m++ {
				var q uint8
				for n := 0; n < 4; n++ {
					q += uint8(ternaryCode(x[128*h+32*n+m], id)&3) << (2 * n)
				}
				b[32*h+m] = q
			}
		}
	}
}

// ternaryLanes returns the eight int32 lanes the AVX2 kernels
// (ggml_vec_dot_tq1_0_q8_K, ggml_vec_dot_tq2_0_q8_K) hold for one block:
// every 32-byte activation load covers 32 consecutive elements, so lane l
// collects code·q8 of the elements e with e mod 32 in [4l, 4l+4), and the
// −1 offset of the codes comes off as the activation sums bsums[2l] +
// bsums[2l+1], i.e. of elements 32l..32l+31. The int16 intermediates of
// those kernels cannot overflow for codes ≤ 2 and |q8| ≤ 127.
func ternaryLanes(c *[qkK]int32, y []byte) [8]int32 {
	var s [8]int32
	for e, q := range c {
		s[(e%32)/4] += q * int32(int8(y[4+e]))
	}
	for l := range s {
		s[l] -= int32(q8kBsum(y, 2*l) + q8kBsum(y, 2*l+1))
	}
	return s
}

// dotTernary is the reference dot of TQ1_0 (bb = 54 bytes a block) and
// TQ2_0 (bb = 66), in the float order of both AVX2 kernels: per block
// acc[l] = fma(float(lane l), q8.d·fp16(d), acc[l]) (ggml writes a
// multiply and an add, which GCC contracts), then hsum_float_8.
func dotTernary(n int, w, act []byte, bb int) float32 {
	var acc lanes8
	var c [qkK]int32 // stays on the stack: the code readers are called directly
	for i := 0; i < n/qkK; i++ {
		b, y := w[i*bb:(i+1)*bb], act[i*292:]
		if bb == 54 {
			tq1Codes(&c, b)
		} else {
			tq2Codes(&c, b)
		}
		s := ternaryLanes(&c, y)
		acc.fmaInts(q8kD(y)*f16(b[bb-2:]), &s)
	}
	return acc.hsum()
}

func dotTQ1_0(n int, w, act []byte) float32 { return dotTernary(n, w, act, 54) }

func dotTQ2_0(n int, w, act []byte) float32 { return dotTernary(n, w, act, 66) }
