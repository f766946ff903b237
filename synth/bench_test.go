package synth

import (
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

func BenchmarkNormals(b *testing.B) {
	row := make([]float32, 4096)
	b.SetBytes(int64(len(row)) * 4)
	for i := 0; b.Loop(); i++ {
		g := rowRNG(1, 2, i)
		g.normals(row, 0.02)
	}
}

func BenchmarkEncode(b *testing.B) {
	for _, t := range []quant.Type{quant.F32, quant.F16, quant.Q8_0, quant.Q4_0, quant.Q4_K, quant.Q6_K} {
		b.Run(t.String(), func(b *testing.B) {
			row := make([]float32, 4096)
			g := rowRNG(1, 2, 3)
			g.normals(row, 0.02)
			enc, err := encoder(t)
			if err != nil {
				b.Fatal(err)
			}
			n, _ := quant.RowBytes(t, len(row))
			dst := make([]byte, n)
			b.SetBytes(int64(len(row)) * 4)
			for b.Loop() {
				enc(dst, row)
			}
		})
	}
}
