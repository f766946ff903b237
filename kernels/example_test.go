package kernels_test

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/qsf-llm/qsf/kernels"
	"github.com/qsf-llm/qsf/quant"
)

// ExampleRepackTo repacks a Q4_0 matrix at load time into the layout
// RepackType names for the default tier (Q4_0x16 on avx512, else Q4_0x8)
// and multiplies it: the results equal those of the matrix in the file's
// layout, bit for bit.
func ExampleRepackTo() {
	const rows, cols = 16, 64
	r := rand.New(rand.NewPCG(1, 2))
	weights := make([]float32, rows*cols)
	x := make([]float32, cols)
	for i := range weights {
		weights[i] = float32(r.NormFloat64())
	}
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}

	// Quantize the weights to Q4_0, as a GGUF file stores them, and the
	// activation to Q8_0, Q4_0's activation type.
	q4, _ := quant.Lookup(quant.Q4_0)
	rowBytes, _ := quant.RowBytes(quant.Q4_0, cols)
	w := make([]byte, rows*rowBytes)
	for i := 0; i < rows; i++ {
		q4.QuantizeRef(w[i*rowBytes:(i+1)*rowBytes], weights[i*cols:(i+1)*cols])
	}
	act := make([]byte, cols/32*34)
	kernels.Quantize(quant.Q8_0, act, x)

	typ, ok := kernels.RepackType(quant.Q4_0, rows, cols)
	fmt.Println(typ == kernels.Q4_0x8 || typ == kernels.Q4_0x16, ok)
	packed := make([]byte, len(w))
	if err := kernels.RepackTo(typ, packed, w, rows, cols); err != nil {
		fmt.Println(err)
		return
	}

	file, fast := make([]float32, rows), make([]float32, rows)
	kernels.MatVec(quant.Q4_0, file, w, cols, act)
	kernels.MatVec(typ, fast, packed, cols, act)
	fmt.Println(slices.Equal(file, fast))
	// Output:
	// true true
	// true
}
