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

func dotIQ4NL(n int, w, act []byte) float32 {
	var sum float32
	for i := 0; i < n/qk; i++ {
		x, y := w[i*18:], act[i*34:]
		isum := 0
		for j := 0; j < 16; j++ {
			isum += int(kvaluesIQ4NL[x[2+j]&0xF]) * int(int8(y[2+j]))
			isum += int(kvaluesIQ4NL[x[2+j]>>4]) * int(int8(y[2+j+16]))
		}
		sum += f16(x) * f16(y) * float32(isum)
	}
	return sum
}
