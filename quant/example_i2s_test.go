package quant_test

import (
	"fmt"

	"github.com/qsf-llm/qsf/quant"
)

// An I2_S tensor's layout follows from the size of its data; an
// unexpected size is refused.
func ExampleDetectI2S() {
	const rows, cols = 4, 1024
	values := make([]int8, rows*cols)
	for i := range values {
		values[i] = int8(i%3 - 1)
	}
	data, err := quant.EncodeI2S(quant.I2STensorScale, values, 0.5, nil)
	if err != nil {
		panic(err)
	}
	layout, err := quant.DetectI2S("blk.0.attn_q.weight", rows*cols, len(data))
	fmt.Println(len(data), layout, err)

	typ, out, scale, err := quant.ConvertI2S(layout, data, rows, cols, nil)
	fmt.Println(typ, len(out), scale, err)

	_, err = quant.DetectI2S("blk.0.attn_q.weight", rows*cols, 1500)
	fmt.Println(err != nil)
	// Output:
	// 1056 I2_S/256 (codes, float32 tensor scale after them) <nil>
	// TQ2_0 1056 0.5 <nil>
	// true
}
