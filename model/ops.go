package model

import (
	"math"
	"sync"

	"github.com/qsf-llm/qsf/kernels"
	"github.com/qsf-llm/qsf/quant"
)

// The element-wise operations of the forward pass. Each follows the
// arithmetic of llama.cpp's CPU backend where that decides the last bits
// (sums of squares in float64, the fp16 GELU table, RoPE angles built by
// repeated float32 multiplication).

// rmsNorm writes x / sqrt(mean(x²) + eps) · w into dst.
func rmsNorm(dst, x, w []float32, eps float32) {
	var sum float64
	for _, v := range x {
		sum += float64(v * v)
	}
	rmsScale(dst, x, w, sum, eps)
}

// rmsScale finishes rmsNorm of x into dst from its sum of squares.
func rmsScale(dst, x, w []float32, sum float64, eps float32) {
	mean := float32(sum / float64(len(x)))
	s := 1 / float32(math.Sqrt(float64(mean+eps)))
	for i, v := range x {
		dst[i] = v * s * w[i]
	}
}

// rmsNormRows is rmsNorm of each row of width elements of x into the same
// row of dst. The sum of squares of a row is a chain of dependent adds in
// a fixed order; four rows' chains run side by side, each in its own order.
func rmsNormRows(dst, x []float32, width int, w []float32, eps float32) {
	rows := len(x) / width
	r := 0
	for ; r+4 <= rows; r += 4 {
		x0, x1 := x[r*width:(r+1)*width], x[(r+1)*width:(r+2)*width]
		x2, x3 := x[(r+2)*width:(r+3)*width], x[(r+3)*width:(r+4)*width]
		x1, x2, x3 = x1[:len(x0)], x2[:len(x0)], x3[:len(x0)]
		var s0, s1, s2, s3 float64
		for i, v := range x0 {
			s0 += float64(v * v)
			s1 += float64(x1[i] * x1[i])
			s2 += float64(x2[i] * x2[i])
			s3 += float64(x3[i] * x3[i])
		}
		rmsScale(dst[r*width:(r+1)*width], x0, w, s0, eps)
		rmsScale(dst[(r+1)*width:(r+2)*width], x1, w, s1, eps)
		rmsScale(dst[(r+2)*width:(r+3)*width], x2, w, s2, eps)
		rmsScale(dst[(r+3)*width:(r+4)*width], x3, w, s3, eps)
	}
	for ; r < rows; r++ {
		rmsNorm(dst[r*width:(r+1)*width], x[r*width:(r+1)*width], w, eps)
	}
}

// layerNorm writes (x - mean) / sqrt(var + eps) · w + b into dst.
func layerNorm(dst, x, w, b []float32, eps float32) {
	var sum float64
	for _, v := range x {
		sum += float64(v)
	}
	mean := float32(sum / float64(len(x)))
	var sq float64
	for i, v := range x {
		d := v - mean
		dst[i] = d
		sq += float64(d * d)
	}
	variance := float32(sq / float64(len(x)))
	s := 1 / float32(math.Sqrt(float64(variance+eps)))
	for i := range dst[:len(x)] {
		dst[i] = float32(dst[i]*s*w[i]) + b[i]
	}
}

// ropeAngles fills cs with cos and sin of the angles of position pos for
// each of the dims/2 dimension pairs: pos·base^(-2i/dims), built by
// repeated float32 multiplication as ggml does, through glibc's sinf/cosf.
func ropeAngles(cs []float32, dims, pos int, base float32) {
	thetaScale := float32(math.Pow(float64(base), -2/float64(dims)))
	theta := float32(pos)
	for i := 0; i < dims/2; i++ {
		cs[2*i+1], cs[2*i] = sincosf(theta)
		theta *= thetaScale
	}
}

// rope rotates the first dims dimensions of each of heads heads of width
// headDim in x by the angles in cs (from ropeAngles). The rotation is
// fused as GCC compiles ggml's rope (x0·cos − x1·sin with one FMA).
func rope(k *kernels.Tier, x []float32, heads, headDim, dims int, cs []float32, style RopeStyle) {
	step, off := 2, 1 // normal: adjacent pairs
	if style == RopeNeoX {
		step, off = 1, dims/2
	}
	for h := 0; h < heads; h++ {
		k.RotateF32(x[h*headDim:h*headDim+dims], cs[:dims&^1], step, off)
	}
}

func scale(x []float32, s float32) {
	for i := range x {
		x[i] *= s
	}
}

func add(dst, x []float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] += x[i]
	}
}

// addBias adds b to dst when the model has that bias.
func addBias(dst, b []float32) {
	if b != nil {
		add(dst, b)
	}
}

// gated writes act(gate)·up into dst (dst may be gate).
func gated(k *kernels.Tier, dst, gate, up []float32, act Activation) {
	activateInto(k, dst, gate, act)
	k.MulF32(dst, up)
}

// activate applies act to x in place.
func activate(k *kernels.Tier, x []float32, act Activation) { activateInto(k, x, x, act) }

func activateInto(k *kernels.Tier, dst, x []float32, act Activation) {
	if act == SiLU {
		k.SiluF32(dst, x)
		return
	}
	for i, v := range x {
		dst[i] = gelu(v)
	}
}

// gelu is llama.cpp's GELU: the tanh approximation, looked up in a table
// indexed by x rounded to fp16 and holding fp16 results; |x| ≥ 10 bypasses
// the table. The table is buildGELUTable's.
func gelu(x float32) float32 {
	switch {
	case x <= -10:
		return 0
	case x >= 10:
		return x
	}
	geluOnce.Do(buildGELUTable)
	return quant.FP16ToFP32(geluTable[quant.FP32ToFP16(x)])
}

var (
	geluOnce  sync.Once
	geluTable []uint16
)

// buildGELUTable fills geluTable as ggml_cpu_init fills llama.cpp's:
// entry i is ggml_gelu_f32 of fp16 value i, rounded to fp16. GCC compiles
// ggml_gelu_f32's 1 + a·x·x (a = 0.044715) as one fused multiply-add,
// fma(a·x, x, 1), in the x86 builds with FMA (the reference's): its
// single rounding changes one entry (0xBFFF, x ≈ -1.999) by an fp16 ulp
// from the twice-rounded sum, which is what the synthetic gpt2 file's
// logits showed.
func buildGELUTable() {
	geluTable = make([]uint16, 1<<16)
	for i := range geluTable {
		x := quant.FP16ToFP32(uint16(i))
		const sqrt2OverPi = 0.79788456080286535587989211986876
		const coefA = 0.044715
		inner := quant.FMA32(float32(coefA*x), x, 1)
		y := 0.5 * x * (1 + float32(math.Tanh(float64(float32(sqrt2OverPi*x)*inner))))
		geluTable[i] = quant.FP32ToFP16(y)
	}
}
