package synth

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"runtime"
	"sync"

	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/quant"
)

// Progress reports how far Write has come.
type Progress struct {
	Tensor     int    // index of the tensor being written
	Tensors    int    // number of tensors
	Name       string // its name
	Done       int64  // tensor bytes written so far
	Total      int64  // tensor bytes in the file
	TensorDone bool   // the tensor is complete
}

// WriteOptions control Write. The zero value is fine.
type WriteOptions struct {
	// Threads generate and quantize rows in parallel; 0 means one per
	// CPU. The output does not depend on it.
	Threads int
	// Progress, when set, is called after each chunk of rows is
	// written.
	Progress func(Progress)
}

// chunkBytes bounds the quantized data held in memory at once.
const chunkBytes = 8 << 20

// Write writes the planned GGUF file to w. It holds at most one chunk of
// a tensor (a few MiB) in memory at a time.
func (p *Plan) Write(w io.Writer, opts WriteOptions) error {
	threads := opts.Threads
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	total := p.TensorBytes()
	var done int64
	var buf []byte
	return format.WriteGGUF(w, p.Metadata, p.writerTensors(), func(i int, w io.Writer) error {
		t := &p.Tensors[i]
		l := t.layout
		rowBytes := int(t.Bytes) / l.rows()
		perChunk := max(1, chunkBytes/rowBytes)
		for r0 := 0; r0 < l.rows(); r0 += perChunk {
			r1 := min(r0+perChunk, l.rows())
			n := (r1 - r0) * rowBytes
			if cap(buf) < n {
				buf = make([]byte, n)
			}
			if err := p.fillRows(buf[:n], t, r0, r1, threads); err != nil {
				return err
			}
			if _, err := w.Write(buf[:n]); err != nil {
				return err
			}
			done += int64(n)
			if opts.Progress != nil {
				opts.Progress(Progress{Tensor: i, Tensors: len(p.Tensors), Name: t.Name,
					Done: done, Total: total, TensorDone: r1 == l.rows()})
			}
		}
		return nil
	})
}

// fillRows writes rows [r0, r1) of t, encoded, to dst, splitting the rows
// between threads goroutines.
func (p *Plan) fillRows(dst []byte, t *Tensor, r0, r1, threads int) error {
	enc, err := encoder(t.Type)
	if err != nil {
		return fmt.Errorf("synth: tensor %s: %w", t.Name, err)
	}
	l := t.layout
	rowBytes := len(dst) / (r1 - r0)
	h := hashName(t.Name)
	work := func(a, b int) {
		row := make([]float32, l.ne0)
		for r := a; r < b; r++ {
			if t.Std == 0 {
				for j := range row {
					row[j] = 1
				}
			} else {
				g := rowRNG(p.Seed, h, r)
				g.normals(row, t.Std)
			}
			off := (r - r0) * rowBytes
			enc(dst[off:off+rowBytes], row)
		}
	}
	threads = min(threads, r1-r0)
	if threads <= 1 || int64(r1-r0)*int64(l.ne0) < 1<<16 {
		work(r0, r1)
		return nil
	}
	var wg sync.WaitGroup
	for k := range threads {
		a, b := r0+(r1-r0)*k/threads, r0+(r1-r0)*(k+1)/threads
		wg.Go(func() { work(a, b) })
	}
	wg.Wait()
	return nil
}

// encoder returns the function that stores a row of float32 in type t:
// llama-quantize's reference quantizer for quantized types.
func encoder(t quant.Type) (func(dst []byte, src []float32), error) {
	if t == quant.F32 {
		return func(dst []byte, src []float32) {
			for i, x := range src {
				binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(x))
			}
		}, nil
	}
	tr, err := quant.Lookup(t)
	if err != nil {
		return nil, err
	}
	if tr.QuantizeRef == nil {
		return nil, fmt.Errorf("%w: no quantizer for %v", quant.ErrUnsupported, t)
	}
	return tr.QuantizeRef, nil
}
