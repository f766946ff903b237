//go:build amd64 && !purego

package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// BenchmarkDecodeStream runs the avx512 tier's decode kernels on one
// thread over a tinyllama-1.1b matrix (5632×2048, the FFN's gate and
// up) rotated through ≥ 512 MiB of copies, so that the weights stream
// from memory as in a decode step, at several prefetch distances
// ("ahead"), beside Touch over the same buffer (the `qsf bench --membw`
// yardstick). It reports GB/s of weights per CPU second (cpuGB/s), which
// the machine's other load disturbs less than wall time.
//
//	go test ./kernels -run - -bench DecodeStream -benchtime 2s
func BenchmarkDecodeStream(b *testing.B) {
	if !haveAVX512 {
		b.Skip("CPU lacks AVX-512 F/BW/VL/VNNI")
	}
	const rows, cols = 5632, 2048
	type kern struct {
		typ quant.Type
		run func(out []float32, w []byte, rowBytes int, act, aux []byte, ahead int)
	}
	kerns := []kern{
		{Q4_0x8, func(out []float32, w []byte, rowBytes int, act, aux []byte, ahead int) {
			dotQ4_0x8AVX512(&out[0], len(out)/8, &w[0], cols/32, &aux[0], ahead)
		}},
		{Q4_0x8 | 1<<20, func(out []float32, w []byte, rowBytes int, act, aux []byte, ahead int) {
			dotQ4_0x8AVX2(&out[0], len(out)/8, &w[0], cols/32, &aux[0])
		}},
		{Q8_0x4, func(out []float32, w []byte, rowBytes int, act, aux []byte, ahead int) {
			dotQ8_0x4RowsAVX512(&out[0], len(out)/4, &w[0], cols/32, &aux[0], ahead)
		}},
		{quant.Q6_K, func(out []float32, w []byte, rowBytes int, act, aux []byte, ahead int) {
			dotQ6_KRows2AVX512(&out[0], len(out)/2, &w[0], cols/256, rowBytes, &act[0], &aux[0], ahead)
		}},
	}
	// stream calls f on each copy of a matrix of size bytes in turn,
	// counting read bytes a call.
	stream := func(b *testing.B, size, read int, f func(o int)) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		n := (512 << 20) / size
		b.SetBytes(int64(read))
		c0 := threadCPU()
		i := 0
		for b.Loop() {
			f(i % n * size)
			i++
		}
		if c1 := threadCPU(); c0 >= 0 && c1 > c0 {
			b.ReportMetric(float64(read)*float64(i)/float64(c1-c0), "cpuGB/s")
		}
	}
	for _, k := range kerns {
		name := typeName(k.typ &^ (1 << 20))
		if k.typ&(1<<20) != 0 {
			name += "avx2"
			k.typ &^= 1 << 20
		}
		file := k.typ
		if rk := repackOf(k.typ); rk != nil {
			file = rk.file
		}
		r := rand.New(rand.NewPCG(61, 62))
		w := randomRows(r, file, rows, cols)
		if file != k.typ {
			if _, err := Repack(file, w, w, rows, cols); err != nil {
				b.Fatal(err)
			}
		}
		rowBytes, _ := quant.RowBytes(file, cols)
		act := randomRows(r, vecDotType[file], 1, cols)
		aux := avx512Tier.prepare(k.typ, nil, act, cols)
		out := make([]float32, rows)
		n := (512 << 20) / len(w)
		buf := make([]byte, n*len(w))
		for i := range n {
			copy(buf[i*len(w):], w)
		}
		b.Run(fmt.Sprintf("%s/touch", name), func(b *testing.B) {
			stream(b, len(w), len(w), func(o int) { Touch(buf[o : o+len(w)]) })
		})
		aheads := []int{0, 1 << 10, 2 << 10, 4 << 10, 8 << 10, 16 << 10}
		for _, ahead := range aheads {
			b.Run(fmt.Sprintf("%s/ahead=%d", name, ahead), func(b *testing.B) {
				stream(b, len(w), len(w), func(o int) { k.run(out, buf[o:o+len(w)], rowBytes, act, aux, ahead) })
			})
		}
		// A thread's share of a job of eight pieces at two threads: four
		// consecutive pieces (Pool's runs) or every other piece.
		for _, order := range []string{"run", "alternate"} {
			b.Run(fmt.Sprintf("%s/pieces=%s", name, order), func(b *testing.B) {
				piece := rows / 8 * rowBytes
				stream(b, len(w), len(w)/2, func(o int) {
					for i := range 4 {
						j := i
						if order == "alternate" {
							j = 2 * i
						}
						lo := o + j*piece
						k.run(out[:rows/8], buf[lo:lo+piece], rowBytes, act, aux, decodeAhead)
					}
				})
			})
		}
		// A thread's halves of two jobs in a row at two threads, the
		// jobs' matrices one after the other in memory: the back half
		// of the first and the front half of the second (the pool's
		// turns: one run of memory) or both front halves (two cold
		// starts).
		for _, order := range []string{"turned", "fixed"} {
			b.Run(fmt.Sprintf("%s/halves=%s", name, order), func(b *testing.B) {
				half := rows / 2 * rowBytes
				stream(b, 2*len(w), len(w), func(o int) {
					first := o
					if order == "turned" {
						first += half
					}
					k.run(out[:rows/2], buf[first:first+half], rowBytes, act, aux, decodeAhead)
					k.run(out[:rows/2], buf[o+len(w):o+len(w)+half], rowBytes, act, aux, decodeAhead)
				})
			})
		}
		// The compute ceiling: a slice of the matrix that stays in L2.
		const hot = 512
		b.Run(fmt.Sprintf("%s/L2", name), func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			size := hot * rowBytes
			b.SetBytes(int64(size))
			c0 := threadCPU()
			i := 0
			for b.Loop() {
				k.run(out[:hot], w[:size], rowBytes, act, aux, 0)
				i++
			}
			if c1 := threadCPU(); c0 >= 0 && c1 > c0 {
				b.ReportMetric(float64(size)*float64(i)/float64(c1-c0), "cpuGB/s")
			}
		})
	}
}

// BenchmarkDecodeStreamF32 is BenchmarkDecodeStream for the avx512 tier's
// F32 kernel on one thread: a 12L-768 FFN matrix (2048×768) rotated
// through ≥ 512 MiB of copies, beside Touch over the same bytes.
//
//	go test ./kernels -run - -bench DecodeStreamF32 -benchtime 2s
func BenchmarkDecodeStreamF32(b *testing.B) {
	if !haveAVX512 {
		b.Skip("CPU lacks AVX-512 F/BW/VL/VNNI")
	}
	const rows, cols = 2048, 768
	r := rand.New(rand.NewPCG(65, 66))
	w := randomRows(r, quant.F32, rows, cols)
	act := randomRows(r, quant.F32, 1, cols)
	out := make([]float32, rows)
	n := (512 << 20) / len(w)
	buf := make([]byte, n*len(w))
	for i := range n {
		copy(buf[i*len(w):], w)
	}
	for _, k := range []string{"touch", "rows"} {
		b.Run("F32/"+k, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.SetBytes(int64(len(w)))
			c0 := threadCPU()
			i := 0
			for b.Loop() {
				m := buf[i%n*len(w) : (i%n+1)*len(w)]
				if k == "touch" {
					Touch(m)
				} else {
					f32AVX512(out, m, 4*cols, cols, act, nil)
				}
				i++
			}
			if c1 := threadCPU(); c0 >= 0 && c1 > c0 {
				b.ReportMetric(float64(len(w))*float64(i)/float64(c1-c0), "cpuGB/s")
			}
		})
	}
}

// BenchmarkDecodeStreamPool is BenchmarkDecodeStream's matrices through a
// Pool of two threads (MatVec, the avx512 tier), beside Touch of the same
// bytes split by Parallel: wall MB/s, and GB/s per CPU second of the
// process (both threads, spinning included).
//
//	go test ./kernels -run - -bench DecodeStreamPool -benchtime 2s
func BenchmarkDecodeStreamPool(b *testing.B) {
	if !haveAVX512 {
		b.Skip("CPU lacks AVX-512 F/BW/VL/VNNI")
	}
	const rows, cols = 5632, 2048
	for _, typ := range []quant.Type{Q4_0x8, Q8_0x4} {
		file := repackOf(typ).file
		r := rand.New(rand.NewPCG(63, 64))
		w := randomRows(r, file, rows, cols)
		if _, err := Repack(file, w, w, rows, cols); err != nil {
			b.Fatal(err)
		}
		act := randomRows(r, vecDotType[file], 1, cols)
		out := make([]float32, rows)
		n := (512 << 20) / len(w)
		buf := make([]byte, n*len(w))
		for i := range n {
			copy(buf[i*len(w):], w)
		}
		p := NewPoolTier(avx512Tier, 2)
		var sums [64]uint64
		var o int // the copy being read
		touch := func(lo, hi int) { sums[lo] = Touch(buf[o+lo*len(w)/64 : o+hi*len(w)/64]) }
		for _, op := range []string{"touch", "matvec"} {
			b.Run(fmt.Sprintf("%s/%s", typeName(typ), op), func(b *testing.B) {
				b.SetBytes(int64(len(w)))
				c0 := processCPU()
				i := 0
				for b.Loop() {
					o = i % n * len(w)
					if op == "touch" {
						p.Parallel(64, touch)
					} else {
						p.MatVec(typ, out, buf[o:o+len(w)], cols, act)
					}
					i++
				}
				if c1 := processCPU(); c0 >= 0 && c1 > c0 {
					b.ReportMetric(float64(len(w))*float64(i)/float64(c1-c0), "cpuGB/s")
				}
			})
		}
		p.Close()
	}
}
