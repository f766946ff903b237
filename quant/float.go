package quant

import (
	"encoding/binary"
	"math"
)

// Plain float types: F32, F16 and BF16. Their dot products follow the
// structure of ggml's AVX2 kernels (ggml_vec_dot_f32/_f16/_bf16): 32-element
// steps accumulated in four 8-lane float32 vectors, a fixed reduction tree,
// and a scalar tail summed in float64.

func init() {
	register(&Traits{Type: F32, BlockSize: 1, BlockBytes: 4, VecDot: F32,
		Dequantize: dequantF32, Quantize: quantF32, Dot: dotF32})
	register(&Traits{Type: F16, BlockSize: 1, BlockBytes: 2, VecDot: F16,
		Dequantize: dequantF16, Quantize: quantF16, Dot: dotF16})
	register(&Traits{Type: BF16, BlockSize: 1, BlockBytes: 2, VecDot: BF16,
		Dequantize: dequantBF16, Quantize: quantBF16, Dot: dotBF16})
}

func f32At(b []byte, i int) float32 {
	return math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
}

func dequantF32(dst []float32, src []byte) {
	for i := range dst {
		dst[i] = f32At(src, i)
	}
}

func quantF32(dst []byte, src []float32) {
	for i, v := range src {
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
	}
}

func dequantF16(dst []float32, src []byte) {
	for i := range dst {
		dst[i] = FP16ToFP32(le16(src[2*i:]))
	}
}

func quantF16(dst []byte, src []float32) {
	for i, v := range src {
		put16(dst[2*i:], FP32ToFP16(v))
	}
}

func dequantBF16(dst []float32, src []byte) {
	for i := range dst {
		dst[i] = BF16ToFP32(le16(src[2*i:]))
	}
}

func quantBF16(dst []byte, src []float32) {
	for i, v := range src {
		put16(dst[2*i:], FP32ToBF16(v))
	}
}

// reduce32 sums the 32 lanes of four 8-lane accumulators the way ggml's
// GGML_F32x8_REDUCE does on AVX: x0+=x2, x1+=x3, x0+=x1, then halves, then
// two horizontal adds.
func reduce32(acc *[32]float32) float32 {
	var x [8]float32
	for l := 0; l < 8; l++ {
		a := acc[l] + acc[16+l]
		b := acc[8+l] + acc[24+l]
		x[l] = a + b
	}
	t0 := [4]float32{x[0] + x[4], x[1] + x[5], x[2] + x[6], x[3] + x[7]}
	t1a, t1b := t0[0]+t0[1], t0[2]+t0[3]
	return t1a + t1b
}

// dotF32 is ggml_vec_dot_f32: like dotF16 (FMA into 32 lanes, the
// reduction tree), except that its tail
// accumulates in float32 ("sumf += x[i]*y[i]", not fused: verified against
// llama.cpp's logits on stories260K-f32, whose ffn_down rows have a tail).
func dotF32(n int, w, act []byte) float32 {
	np := n &^ 31
	var acc [32]float32
	for i := 0; i < np; i += 32 {
		x, y := (*[128]byte)(w[4*i:]), (*[128]byte)(act[4*i:])
		for l := range acc {
			a := math.Float32frombits(binary.LittleEndian.Uint32(x[4*l:]))
			b := math.Float32frombits(binary.LittleEndian.Uint32(y[4*l:]))
			if r, ok := fma32Try(a, b, acc[l]); ok {
				acc[l] = r
			} else {
				acc[l] = fma32(a, b, acc[l])
			}
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

func dotF16(n int, w, act []byte) float32 {
	var acc [32]float32
	np := n &^ 31
	for i := 0; i < np; i += 32 {
		x, y := (*[64]byte)(w[2*i:]), (*[64]byte)(act[2*i:])
		for l := range acc {
			a := FP16ToFP32(binary.LittleEndian.Uint16(x[2*l:]))
			b := FP16ToFP32(binary.LittleEndian.Uint16(y[2*l:]))
			if r, ok := fma32Try(a, b, acc[l]); ok {
				acc[l] = r
			} else {
				acc[l] = fma32(a, b, acc[l])
			}
		}
	}
	sum := float64(reduce32(&acc))
	for i := np; i < n; i++ {
		sum += float64(FP16ToFP32(le16(w[2*i:])) * FP16ToFP32(le16(act[2*i:])))
	}
	return float32(sum)
}

// dotBF16 follows ggml_vec_dot_bf16's AVX2 path: separate multiply and add
// into four 8-lane accumulators, (c1+c3)+(c2+c4), then a horizontal sum, and
// a float64 tail.
func dotBF16(n int, w, act []byte) float32 {
	var c [4][8]float32
	i := 0
	for ; i+32 <= n; i += 32 {
		for v := 0; v < 4; v++ {
			for l := 0; l < 8; l++ {
				k := i + 8*v + l
				p := float32(BF16ToFP32(le16(w[2*k:])) * BF16ToFP32(le16(act[2*k:])))
				c[v][l] = p + c[v][l]
			}
		}
	}
	var x [8]float32
	for l := 0; l < 8; l++ {
		x[l] = (c[0][l] + c[2][l]) + (c[1][l] + c[3][l])
	}
	g := [4]float32{x[4] + x[0], x[5] + x[1], x[6] + x[2], x[7] + x[3]}
	g0 := g[0] + g[2]
	g1 := g[1] + g[3]
	sum := float64(g0 + g1)
	for ; i < n; i++ {
		sum += float64(BF16ToFP32(le16(w[2*i:])) * BF16ToFP32(le16(act[2*i:])))
	}
	return float32(sum)
}
