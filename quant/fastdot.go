package quant

import (
	"encoding/binary"
	"math"
)

// The dot products of this file are the portable fast forms of the lane
// arithmetic described in lanes.go: they decode whole blocks into integer
// registers and sum with unrolled integer arithmetic (exact in any order),
// and keep the float32 lanes only where llama.cpp rounds (one fma per lane
// and block). Each equals its lane-by-lane definition (dotLanes, kLanes)
// bit for bit; fastdot_test.go checks that on random and extreme blocks.

// q8lane returns Σ_{t<4} x[k+t]·y[k+t] over int8 quants.
func q8lane(x, y *[32]byte, k int) int32 {
	return int32(int8(x[k]))*int32(int8(y[k])) + int32(int8(x[k+1]))*int32(int8(y[k+1])) +
		int32(int8(x[k+2]))*int32(int8(y[k+2])) + int32(int8(x[k+3]))*int32(int8(y[k+3]))
}

// q4lo returns Σ_{t<4} (low nibble of q[k+t] − 8)·y[k+t], q4hi the same
// for the high nibbles against y[16+k+t].
func q4lo(q *[16]byte, y *[32]byte, k int) int32 {
	return (int32(q[k]&15)-8)*int32(int8(y[k])) + (int32(q[k+1]&15)-8)*int32(int8(y[k+1])) +
		(int32(q[k+2]&15)-8)*int32(int8(y[k+2])) + (int32(q[k+3]&15)-8)*int32(int8(y[k+3]))
}

func q4hi(q *[16]byte, y *[32]byte, k int) int32 {
	return (int32(q[k]>>4)-8)*int32(int8(y[16+k])) + (int32(q[k+1]>>4)-8)*int32(int8(y[16+k+1])) +
		(int32(q[k+2]>>4)-8)*int32(int8(y[16+k+2])) + (int32(q[k+3]>>4)-8)*int32(int8(y[16+k+3]))
}

// dotQ4_0 is dotLanes for Q4_0 (ggml_vec_dot_q4_0_q8_0).
func dotQ4_0(n int, w, act []byte) float32 {
	nb := n / qk
	w, act = w[:nb*18], act[:nb*34]
	var acc lanes8
	for i := 0; i < nb; i++ {
		b := (*[18]byte)(w[i*18:])
		a := (*[34]byte)(act[i*34:])
		d := FP16ToFP32(uint16(b[0])|uint16(b[1])<<8) * FP16ToFP32(uint16(a[0])|uint16(a[1])<<8)
		q, y := (*[16]byte)(b[2:]), (*[32]byte)(a[2:])
		s := [8]int32{q4lo(q, y, 0), q4lo(q, y, 4), q4lo(q, y, 8), q4lo(q, y, 12),
			q4hi(q, y, 0), q4hi(q, y, 4), q4hi(q, y, 8), q4hi(q, y, 12)}
		acc.fmaInts(d, &s)
	}
	return acc.hsum()
}

// dotQ8_0 is dotLanes for Q8_0 (ggml_vec_dot_q8_0_q8_0).
func dotQ8_0(n int, w, act []byte) float32 {
	nb := n / qk
	w, act = w[:nb*34], act[:nb*34]
	var acc lanes8
	for i := 0; i < nb; i++ {
		b := (*[34]byte)(w[i*34:])
		a := (*[34]byte)(act[i*34:])
		d := FP16ToFP32(uint16(b[0])|uint16(b[1])<<8) * FP16ToFP32(uint16(a[0])|uint16(a[1])<<8)
		x, y := (*[32]byte)(b[2:]), (*[32]byte)(a[2:])
		s := [8]int32{q8lane(x, y, 0), q8lane(x, y, 4), q8lane(x, y, 8), q8lane(x, y, 12),
			q8lane(x, y, 16), q8lane(x, y, 20), q8lane(x, y, 24), q8lane(x, y, 28)}
		acc.fmaInts(d, &s)
	}
	return acc.hsum()
}

// DotQ4_0Gemv is the dot product of a Q4_0 row with a Q8_0 activation in
// the order of ggml_gemv_q4_0_8x8_q8_0 (AVX2), which llama.cpp b4748 runs
// instead of ggml_vec_dot_q4_0_q8_0 for Q4_0 matrices it repacked at load
// time (those with a multiple of 8 rows, except token_embd): one float32
// accumulator per row, acc = fma(float(Σq·a), fp16(dw)·fp16(da), acc), block
// after block.
func DotQ4_0Gemv(n int, w, act []byte) float32 {
	nb := n / qk
	w, act = w[:nb*18], act[:nb*34]
	var acc float32
	for i := 0; i < nb; i++ {
		b := (*[18]byte)(w[i*18:])
		a := (*[34]byte)(act[i*34:])
		q, y := (*[16]byte)(b[2:]), (*[32]byte)(a[2:])
		isum := q4lo(q, y, 0) + q4lo(q, y, 4) + q4lo(q, y, 8) + q4lo(q, y, 12) +
			q4hi(q, y, 0) + q4hi(q, y, 4) + q4hi(q, y, 8) + q4hi(q, y, 12)
		acc = fma32(float32(isum), FP16ToFP32(uint16(b[0])|uint16(b[1])<<8)*FP16ToFP32(uint16(a[0])|uint16(a[1])<<8), acc)
	}
	return acc
}

// subLanes adds to s[4h..4h+3] the four lane products of 16-element
// sub-block j (elements 16j..16j+15) times its scale sc; h is j's parity,
// as kLanes assigns lanes.
func subLanes(s *[8]int32, x *[qkK]int8, y *[qkK]byte, j int, sc int32) {
	xs, ys := (*[16]int8)(x[16*j:]), (*[16]byte)(y[16*j:])
	l := (*[4]int32)(s[4*(j&1):])
	l[0] += sc * (int32(xs[0])*int32(int8(ys[0])) + int32(xs[1])*int32(int8(ys[1])) +
		int32(xs[2])*int32(int8(ys[2])) + int32(xs[3])*int32(int8(ys[3])))
	l[1] += sc * (int32(xs[4])*int32(int8(ys[4])) + int32(xs[5])*int32(int8(ys[5])) +
		int32(xs[6])*int32(int8(ys[6])) + int32(xs[7])*int32(int8(ys[7])))
	l[2] += sc * (int32(xs[8])*int32(int8(ys[8])) + int32(xs[9])*int32(int8(ys[9])) +
		int32(xs[10])*int32(int8(ys[10])) + int32(xs[11])*int32(int8(ys[11])))
	l[3] += sc * (int32(xs[12])*int32(int8(ys[12])) + int32(xs[13])*int32(int8(ys[13])) +
		int32(xs[14])*int32(int8(ys[14])) + int32(xs[15])*int32(int8(ys[15])))
}

// dotQ6_K is the AVX2 ggml_vec_dot_q6_K_q8_K (see kLanes).
func dotQ6_K(n int, w, act []byte) float32 {
	nb := n / qkK
	w, act = w[:nb*210], act[:nb*292]
	var acc lanes8
	var x [qkK]int8
	for i := 0; i < nb; i++ {
		b := (*[210]byte)(w[i*210:])
		a := (*[292]byte)(act[i*292:])
		for h := 0; h < 2; h++ {
			ql := (*[64]byte)(b[64*h:])
			qh := (*[32]byte)(b[128+32*h:])
			o := (*[128]int8)(x[128*h:])
			for l := 0; l < 32; l++ {
				hb := qh[l]
				o[l] = int8(ql[l]&0xF|hb&3<<4) - 32
				o[l+32] = int8(ql[l+32]&0xF|hb>>2&3<<4) - 32
				o[l+64] = int8(ql[l]>>4|hb>>4&3<<4) - 32
				o[l+96] = int8(ql[l+32]>>4|hb>>6<<4) - 32
			}
		}
		y := (*[qkK]byte)(a[4:])
		var s [8]int32
		for j := 0; j < 16; j++ {
			subLanes(&s, &x, y, j, int32(int8(b[192+j])))
		}
		d := math.Float32frombits(binary.LittleEndian.Uint32(a[:4])) * FP16ToFP32(uint16(b[208])|uint16(b[209])<<8)
		acc.fmaInts(d, &s)
	}
	return acc.hsum()
}

// dotQ4_K is the AVX2 ggml_vec_dot_q4_K_q8_K: per block a 4-lane
// acc_m = fma(-yd·dmin, k4Mins, acc_m) and acc = fma(yd·d, lane sums, acc);
// the result is hsum_float_8(acc) + ((m0+m2)+(m1+m3)).
func dotQ4_K(n int, w, act []byte) float32 {
	nb := n / qkK
	w, act = w[:nb*144], act[:nb*292]
	var acc lanes8
	var accM [4]float32
	var x [qkK]int8
	for i := 0; i < nb; i++ {
		b := (*[144]byte)(w[i*144:])
		a := (*[292]byte)(act[i*292:])
		yd := math.Float32frombits(binary.LittleEndian.Uint32(a[:4]))
		dmin := -yd * FP16ToFP32(uint16(b[2])|uint16(b[3])<<8)
		var sc, mn [8]int32
		for j := 0; j < 8; j++ {
			s, m := scaleMinK4(j, b[4:16])
			sc[j], mn[j] = int32(s), int32(m)
		}
		for k := range accM {
			bs := func(j int) int32 { return int32(int16(uint16(a[260+2*j]) | uint16(a[261+2*j])<<8)) }
			p := mn[2*k]*(bs(4*k)+bs(4*k+1)) + mn[2*k+1]*(bs(4*k+2)+bs(4*k+3))
			accM[k] = fma32(dmin, float32(p), accM[k])
		}
		for c := 0; c < 4; c++ {
			q := (*[32]byte)(b[16+32*c:])
			o := (*[64]int8)(x[64*c:])
			for l := 0; l < 32; l++ {
				o[l] = int8(q[l] & 0xF)
				o[l+32] = int8(q[l] >> 4)
			}
		}
		y := (*[qkK]byte)(a[4:])
		var s [8]int32
		for j := 0; j < 16; j++ {
			subLanes(&s, &x, y, j, sc[j/2])
		}
		acc.fmaInts(yd*FP16ToFP32(uint16(b[0])|uint16(b[1])<<8), &s)
	}
	return acc.hsum() + ((accM[0] + accM[2]) + (accM[1] + accM[3]))
}
