package kernels

import (
	"unsafe"

	"github.com/qsf-llm/qsf/quant"
)

// nativeLittleEndian reports whether float32s in memory are stored
// little-endian, as GGUF stores them, so that a weight row's bytes can be
// read as []float32 in place.
var nativeLittleEndian = func() bool {
	x := uint32(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// f32View views b, 4-byte aligned (mapped tensor data and Go-allocated
// buffers are), as float32s in the machine's byte order.
func f32View(b []byte) []float32 {
	if len(b) < 4 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// f32RowsGeneric is the generic tier's F32 row kernel: quant's F32 dot
// product (ggml_vec_dot_f32's order) on float32 slices with FMA32's fast
// path inline (dotF32Lanes), where the machine stores float32s
// little-endian; elsewhere quant's byte-wise dot product.
func f32RowsGeneric(out []float32, w []byte, rowBytes, cols int, act, _ []byte) {
	if !nativeLittleEndian {
		tt, _ := quant.Lookup(quant.F32)
		genericRows(tt.Dot, out, w, rowBytes, cols, act)
		return
	}
	x := f32View(act[:4*cols])
	for r := range out {
		out[r] = dotF32Lanes(f32View(w[r*rowBytes:r*rowBytes+4*cols]), x)
	}
}
