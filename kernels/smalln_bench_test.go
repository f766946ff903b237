package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// BenchmarkMatMulSmallN measures MatMul of 1 to 8 activations (a
// decoding step of that many sequences) on one thread, for each assembly
// tier, against a 2048×768 matrix; cpu-ns/tok is the thread's CPU time
// per activation.
func BenchmarkMatMulSmallN(b *testing.B) {
	const rows, cols = 2048, 768
	for _, typ := range []quant.Type{Q4_0x8, quant.Q4_0, quant.Q6_K} {
		r := rand.New(rand.NewPCG(23, 24))
		file := typ
		if k := repackOf(typ); k != nil {
			file = k.file
		}
		w := randomRows(r, file, rows, cols)
		if file != typ {
			packed := make([]byte, len(w))
			if _, err := Repack(file, packed, w, rows, cols); err != nil {
				b.Fatal(err)
			}
			w = packed
		}
		tt, err := Lookup(typ)
		if err != nil {
			b.Fatal(err)
		}
		for _, n := range []int{1, 2, 3, 4, 5, 6, 7, 8} {
			acts := randomRows(r, tt.VecDot, n, cols)
			out := make([]float32, n*rows)
			for _, name := range Tiers() {
				if name == "generic" {
					continue
				}
				tr, _ := TierNamed(name)
				b.Run(fmt.Sprintf("%v/n=%d/%s", typeName(typ), n, name), func(b *testing.B) {
					b.SetBytes(int64(len(w)))
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					c0 := threadCPU()
					for i := 0; i < b.N; i++ {
						tr.MatMul(typ, out, w, cols, acts, n)
					}
					if c0 >= 0 {
						b.ReportMetric(float64(threadCPU()-c0)/float64(b.N*n), "cpu-ns/tok")
					}
				})
			}
		}
	}
}

// BenchmarkMatMulHead measures MatMul of Q6_K with 1, 2, 4 and 8 activations
// on one thread, for each assembly tier, against the 32000×768 LM head of
// the 12L-768 test models (20 MB). The calls walk three copies of the
// matrix in turn, 60 MB that no L3 cache here holds, so that each reads
// its weights from memory as a decoding step of a model does; cpu-ns/tok
// is the thread's CPU time per activation.
func BenchmarkMatMulHead(b *testing.B) {
	const rows, cols, copies = 32000, 768, 3
	typ := quant.Q6_K
	r := rand.New(rand.NewPCG(25, 26))
	one := randomRows(r, typ, rows, cols)
	var ws [copies][]byte
	for i := range ws {
		ws[i] = append([]byte(nil), one...)
	}
	tt, err := Lookup(typ)
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1, 2, 4, 8} {
		acts := randomRows(r, tt.VecDot, n, cols)
		out := make([]float32, n*rows)
		for _, name := range Tiers() {
			if name == "generic" {
				continue
			}
			tr, _ := TierNamed(name)
			b.Run(fmt.Sprintf("%v/n=%d/%s", typeName(typ), n, name), func(b *testing.B) {
				b.SetBytes(int64(len(one)))
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				c0 := threadCPU()
				for i := 0; i < b.N; i++ {
					tr.MatMul(typ, out, ws[i%copies], cols, acts, n)
				}
				if c0 >= 0 {
					b.ReportMetric(float64(threadCPU()-c0)/float64(b.N*n), "cpu-ns/tok")
				}
			})
			// Two threads (a Pool), as a decoding step runs the head:
			// cpu-ns/tok is the process's CPU time, the pool's waits
			// included.
			b.Run(fmt.Sprintf("%v/n=%d/%s/pool2", typeName(typ), n, name), func(b *testing.B) {
				b.SetBytes(int64(len(one)))
				p := NewPoolTier(tr, 2)
				defer p.Close()
				c0 := processCPU()
				for i := 0; i < b.N; i++ {
					p.MatMul(typ, out, ws[i%copies], cols, acts, n)
				}
				if c0 >= 0 {
					b.ReportMetric(float64(processCPU()-c0)/float64(b.N*n), "cpu-ns/tok")
				}
			})
		}
	}
}
