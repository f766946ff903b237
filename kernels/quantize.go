package kernels

import (
	"fmt"

	"github.com/qsf-llm/qsf/quant"
)

// Quantize converts the activation src to type t (one of the VecDot types
// of the quant table) in dst, which must hold quant.RowBytes(t, len(src))
// bytes, exactly as quant.Lookup(t).Quantize does: bit for bit, with the
// tier's vector code where it has one (Q8_0 on avx2 and avx512, Q8_K on avx2
// and avx512). It panics
// on an unknown type or wrong lengths, as MatVec does.
func Quantize(t quant.Type, dst []byte, src []float32) {
	current.Load().Quantize(t, dst, src)
}

// Quantize is the package function Quantize on tier tr.
func (tr *Tier) Quantize(t quant.Type, dst []byte, src []float32) {
	tt, err := quant.Lookup(t)
	if err != nil || tt.Quantize == nil {
		panic(fmt.Sprintf("kernels: Quantize: no quantizer for %v", t))
	}
	n, err := quant.RowBytes(t, len(src))
	if err != nil || len(dst) != n {
		panic(fmt.Sprintf("kernels: Quantize: %v of %d elements needs %d bytes, got %d", t, len(src), n, len(dst)))
	}
	var f func(dst []byte, src []float32)
	switch t {
	case quant.F32:
		if nativeLittleEndian {
			// The activation of F32 weights is the vector's bytes: a
			// copy, not quant's element by element encoding.
			copy(dst, f32Bytes(src))
			return
		}
	case quant.Q8_0:
		f = tr.quantQ8_0
	case quant.Q8_1:
		f = tr.quantQ8_1
	case quant.Q8_K:
		f = tr.quantQ8_K
	}
	if f != nil {
		f(dst, src)
		return
	}
	if t == quant.Q8_K && quantQ8_KArch(tr, dst, src) {
		return
	}
	tt.Quantize(dst, src)
}
