package quant

// IQ4_NL: 32-element blocks of 4-bit indices into a fixed non-linear table.
// Layout: d:f16 qs[16]; element j (<16) is the low nibble of qs[j], element
// j+16 the high nibble. The weight quantizer is ggml's quantize_iq4_nl
// without an imatrix (quantize_row_iq4_nl_impl with ntry = 7), which is what
// llama-quantize runs.

// kvaluesIQ4NL is ggml's kvalues_iq4nl.
var kvaluesIQ4NL = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

func init() {
	register(&Traits{Type: IQ4_NL, BlockSize: qk, BlockBytes: 18, VecDot: Q8_0,
		Dequantize: dequantIQ4NL, Quantize: quantIQ4NL, Dot: dotIQ4NL})
}

func dequantIQ4NL(dst []float32, src []byte) {
	for i := 0; i < len(dst)/qk; i++ {
		b := src[i*18:]
		d := f16(b)
		for j := 0; j < 16; j++ {
			dst[i*qk+j] = d * float32(kvaluesIQ4NL[b[2+j]&0xF])
			dst[i*qk+j+16] = d * float32(kvaluesIQ4NL[b[2+j]>>4])
		}
	}
}

// bestIndexInt8 is ggml's best_index_int8 (the bisection version of early
// 2025): the index of the table value nearest to x, ties going up.
func bestIndexInt8(val []int8, x float32) int {
	n := len(val)
	if x <= float32(val[0]) {
		return 0
	}
	if x >= float32(val[n-1]) {
		return n - 1
	}
	ml, mu := 0, n-1
	for mu-ml > 1 {
		mav := (ml + mu) / 2
		if x < float32(val[mav]) {
			mu = mav
		} else {
			ml = mav
		}
	}
	if x-float32(val[mu-1]) < float32(val[mu])-x {
		return mu - 1
	}
	return mu
}

func quantIQ4NL(dst []byte, src []float32) {
	const ntry = 7
	values := kvaluesIQ4NL[:]
	v0 := float32(values[0])
	var L [qk]uint8
	var weight [qk]float32
	for i := 0; i < len(src)/qk; i++ {
		x := src[i*qk : i*qk+qk]
		b := dst[i*18 : i*18+18]
		clear(b)
		var scale float32
		var amax, mx float32
		for j, v := range x {
			weight[j] = v * v
			if ax := abs32(v); ax > amax {
				amax = ax
				mx = v
			}
		}
		if amax >= groupMaxEps {
			d := -mx / v0
			id := 1 / d
			var sumqx, sumq2 float32
			for j, v := range x {
				l := bestIndexInt8(values, id*v)
				L[j] = uint8(l)
				q := float32(values[l])
				w := weight[j]
				sumqx += float32(float32(w*q) * v)
				sumq2 += float32(float32(w*q) * q)
			}
			d = sumqx / sumq2
			best := d * sumqx
			for itry := -ntry; itry <= ntry; itry++ {
				id = (float32(itry) + v0) / mx
				sumqx, sumq2 = 0, 0
				for j, v := range x {
					l := bestIndexInt8(values, id*v)
					q := float32(values[l])
					w := weight[j]
					sumqx += float32(float32(w*q) * v)
					sumq2 += float32(float32(w*q) * q)
				}
				if sumq2 > 0 && float32(sumqx*sumqx) > float32(best*sumq2) {
					d = sumqx / sumq2
					best = d * sumqx
				}
			}
			scale = d
		}
		put16(b, FP32ToFP16(scale))
		id := inv(scale)
		for j, v := range x {
			L[j] = uint8(bestIndexInt8(values, id*v))
		}
		for j := 0; j < 16; j++ {
			b[2+j] = L[j] | L[j+16]<<4
		}
	}
}

// dotIQ4NL is the AVX2 loop of ggml_vec_dot_iq4_nl_q8_0: blocks in pairs,
// the first of each pair into accum1 and the second into accum2, then
// hsum_float_8(accum1+accum2), and a last odd block added in scalar code as
// fma(fp16(da)·fp16(dw), Σq·a, sum).
func dotIQ4NL(n int, w, act []byte) float32 {
	nb := n / qk
	var acc [2]lanes8
	var x [32]int32
	ib := 0
	for ; ib+1 < nb; ib += 2 {
		for k := 0; k < 2; k++ {
			b, y := w[(ib+k)*18:], act[(ib+k)*34:]
			decodeIQ4NL(b, &x)
			var s [8]int32
			groupLanes(&s, &x, y[2:], 1, 1)
			acc[k].fmaInts(f16(y)*f16(b), &s)
		}
	}
	both := acc[0].add(acc[1])
	sum := both.hsum()
	for ; ib < nb; ib++ {
		b, y := w[ib*18:], act[ib*34:]
		decodeIQ4NL(b, &x)
		var isum int32
		for j, v := range x {
			isum += v * int32(int8(y[2+j]))
		}
		sum = fma32(f16(y)*f16(b), float32(isum), sum)
	}
	return sum
}

func decodeIQ4NL(b []byte, x *[32]int32) {
	for j := 0; j < 16; j++ {
		x[j] = int32(kvaluesIQ4NL[b[2+j]&0xF])
		x[j+16] = int32(kvaluesIQ4NL[b[2+j]>>4])
	}
}
