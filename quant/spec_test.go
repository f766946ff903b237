package quant

// The lane-by-lane definitions of the dot products that fastdot.go
// computes faster; TestFastDots requires equal bits.

func specQ4_0(n int, w, act []byte) float32 { return dotLanes(n, w, 18, act, 34, blockQ4_0) }

func specQ8_0(n int, w, act []byte) float32 { return dotLanes(n, w, 34, act, 34, blockQ8_0) }

// specQ4_0Gemv is the dot product of a Q4_0 row with a Q8_0 activation in
// the order of ggml_gemv_q4_0_8x8_q8_0 (AVX2), which llama.cpp b4748 runs
// instead of ggml_vec_dot_q4_0_q8_0 for Q4_0 matrices it repacked at load
// time (those with a multiple of 8 rows, except token_embd): one float32
// accumulator per row, acc = fma(float(Σq·a), fp16(dw)·fp16(da), acc), block
// after block.
func specQ4_0Gemv(n int, w, act []byte) float32 {
	var acc float32
	var x [32]int32
	for i := 0; i < n/qk; i++ {
		b, y := w[i*18:], act[i*34:]
		decodeQ4_0(b, &x)
		var isum int32
		for j, v := range x {
			isum += v * int32(int8(y[2+j]))
		}
		acc = fma32(float32(isum), f16(b)*f16(y), acc)
	}
	return acc
}

func specQ6_K(n int, w, act []byte) float32 {
	var acc lanes8
	var x [qkK]int32
	for i := 0; i < n/qkK; i++ {
		b, y := w[i*210:], act[i*292:]
		for e := range x {
			x[e] = int32(q6At(b, e))
		}
		s := kLanes(&x, y, func(j int) int32 { return int32(int8(b[192+j])) })
		acc.fmaInts(q8kD(y)*f16(b[208:]), &s)
	}
	return acc.hsum()
}

// specQ4_K is the AVX2 ggml_vec_dot_q4_K_q8_K: per block a 4-lane
// acc_m = fma(-yd·dmin, k4Mins, acc_m) and acc = fma(yd·d, lane sums, acc);
// the result is hsum_float_8(acc) + ((m0+m2)+(m1+m3)).
func specQ4_K(n int, w, act []byte) float32 {
	var acc lanes8
	var accM [4]float32
	var x [qkK]int32
	for i := 0; i < n/qkK; i++ {
		b, y := w[i*144:], act[i*292:]
		yd := q8kD(y)
		dmin := -yd * f16(b[2:])
		for k, p := range k4Mins(b, y) {
			accM[k] = fma32(dmin, float32(p), accM[k])
		}
		for e := range x {
			x[e] = int32(q4At(b[16:], e))
		}
		s := k4Lanes(&x, b, y)
		acc.fmaInts(yd*f16(b), &s)
	}
	return acc.hsum() + ((accM[0] + accM[2]) + (accM[1] + accM[3]))
}

// specFMA32 is ggml_vec_dot_f32/_f16 on AVX2+FMA: FMA into 32 lanes, the
// reduction tree, then a float64 tail.
func specFMA32(n int, at func(i int) (float32, float32)) float32 {
	var acc [32]float32
	np := n &^ 31
	for i := 0; i < np; i += 32 {
		for l := 0; l < 32; l++ {
			a, b := at(i + l)
			acc[l] = fma32(a, b, acc[l])
		}
	}
	sum := float64(reduce32(&acc))
	for i := np; i < n; i++ {
		a, b := at(i)
		sum += float64(a * b)
	}
	return float32(sum)
}

func specF16(n int, w, act []byte) float32 {
	return specFMA32(n, func(i int) (float32, float32) {
		return FP16ToFP32(le16(w[2*i:])), FP16ToFP32(le16(act[2*i:]))
	})
}

func specF32(n int, w, act []byte) float32 {
	np := n &^ 31
	var acc [32]float32
	for i := 0; i < np; i += 32 {
		for l := 0; l < 32; l++ {
			acc[l] = fma32(f32At(w, i+l), f32At(act, i+l), acc[l])
		}
	}
	var sum float32
	if np > 0 {
		sum = reduce32(&acc)
	}
	for i := np; i < n; i++ {
		sum += float32(f32At(w, i) * f32At(act, i))
	}
	return sum
}
