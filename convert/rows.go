package convert

import (
	"fmt"
	"io"
	"sync"

	"github.com/qsf-llm/qsf/quant"
)

// chunkBytes bounds the output bytes converted at a time.
const chunkBytes = 4 << 20

// writeTensor writes the data of s in its output type, converting a chunk
// of rows at a time on up to threads goroutines, weighting the columns by
// importance when it is not nil. whole, when not nil, is first offered
// the whole matrix (see Options.QuantizeMatrix). scratch is a buffer kept
// from tensor to tensor.
func writeTensor(w io.Writer, s *source, threads int, importance []float32, whole func(rows, cols int, src []float32) ([]byte, error), scratch *[]byte) error {
	cols, rows := int(s.out.Cols()), int(s.out.Rows())
	outRow, err := quant.RowBytes(s.out.Type, cols)
	if err != nil {
		return err
	}
	if whole != nil {
		all, err := readFloat32(s, rows, cols, scratch)
		if err != nil {
			return err
		}
		b, err := whole(rows, cols, all)
		if err != nil {
			return fmt.Errorf("tensor %s: %w", s.out.Name, err)
		}
		if b != nil {
			if len(b) != rows*outRow {
				return fmt.Errorf("tensor %s: the matrix quantizer returned %d bytes, want %d", s.out.Name, len(b), rows*outRow)
			}
			_, err = w.Write(b)
			return err
		}
	}
	if s.f32 != nil {
		all, err := s.f32()
		if err != nil {
			return err
		}
		if len(all) != rows*cols {
			return fmt.Errorf("%w: tensor %s has %d values, want %d", ErrInput, s.out.Name, len(all), rows*cols)
		}
		return convertChunks(w, rows, cols, outRow, s.out.Type, threads, importance, func(dst []float32, _ *[]byte, r int) error {
			copy(dst, all[r*cols:(r+1)*cols])
			return nil
		})
	}
	if s.srcType == quant.I2_S && s.out.Type == quant.I2_S {
		b, err := s.rows(*scratch, 0, rows)
		if err != nil {
			return err
		}
		*scratch = b
		if uint64(len(b)) != s.out.Size {
			return fmt.Errorf("%w: tensor %s: %d bytes of I2_S, want %d", ErrInput, s.out.Name, len(b), s.out.Size)
		}
		_, err = w.Write(b)
		return err
	}
	srcRow, err := quant.RowBytes(s.srcType, cols)
	if err != nil {
		return err
	}
	if s.perm == nil && s.srcType == s.out.Type {
		step := max(1, chunkBytes/max(srcRow, 1))
		buf := *scratch
		defer func() { *scratch = buf }()
		for lo := 0; lo < rows; lo += step {
			hi := min(rows, lo+step)
			b, err := s.rows(buf, lo, hi)
			if err != nil {
				return err
			}
			if len(b) != (hi-lo)*srcRow {
				return fmt.Errorf("%w: tensor %s: rows [%d, %d) are %d bytes, want %d", ErrInput, s.out.Name, lo, hi, len(b), (hi-lo)*srcRow)
			}
			if _, err := w.Write(b); err != nil {
				return err
			}
			buf = b
		}
		return nil
	}
	tr, err := quant.Lookup(s.srcType)
	if err != nil {
		return fmt.Errorf("%w: tensor %s: %w", ErrUnsupported, s.out.Name, err)
	}
	return convertChunks(w, rows, cols, outRow, s.out.Type, threads, importance, func(dst []float32, raw *[]byte, r int) error {
		src := r
		if s.perm != nil {
			src = s.perm(r)
		}
		b, err := s.rows(*raw, src, src+1)
		*raw = b
		if err != nil {
			return err
		}
		if len(b) != srcRow {
			return fmt.Errorf("%w: tensor %s row %d is %d bytes, want %d", ErrInput, s.out.Name, src, len(b), srcRow)
		}
		tr.Dequantize(dst, b)
		return nil
	})
}

// readFloat32 returns the whole of s as float32 values, row-major.
func readFloat32(s *source, rows, cols int, scratch *[]byte) ([]float32, error) {
	if s.f32 != nil {
		all, err := s.f32()
		if err != nil {
			return nil, err
		}
		if len(all) != rows*cols {
			return nil, fmt.Errorf("%w: tensor %s has %d values, want %d", ErrInput, s.out.Name, len(all), rows*cols)
		}
		return all, nil
	}
	tr, err := quant.Lookup(s.srcType)
	if err != nil {
		return nil, fmt.Errorf("%w: tensor %s: %w", ErrUnsupported, s.out.Name, err)
	}
	srcRow, err := quant.RowBytes(s.srcType, cols)
	if err != nil {
		return nil, err
	}
	all := make([]float32, rows*cols)
	for r := 0; r < rows; r++ {
		src := r
		if s.perm != nil {
			src = s.perm(r)
		}
		b, err := s.rows(*scratch, src, src+1)
		*scratch = b
		if err != nil {
			return nil, err
		}
		if len(b) != srcRow {
			return nil, fmt.Errorf("%w: tensor %s row %d is %d bytes, want %d", ErrInput, s.out.Name, src, len(b), srcRow)
		}
		tr.Dequantize(all[r*cols:(r+1)*cols], b)
	}
	return all, nil
}

// convertChunks quantizes rows to typ, getting row r as float32 from row
// (which may keep a raw-bytes buffer per goroutine in *raw), and writes
// them in order. importance, when not nil, weights the columns (see
// quant.QuantizeRowImportance).
func convertChunks(w io.Writer, rows, cols, outRow int, typ quant.Type, threads int, importance []float32, row func(dst []float32, raw *[]byte, r int) error) error {
	tr, err := quant.Lookup(typ)
	if err != nil || tr.QuantizeRef == nil {
		return fmt.Errorf("%w: no quantizer for %v", ErrUnsupported, typ)
	}
	step := max(1, chunkBytes/max(outRow, 1))
	out := make([]byte, min(rows, step)*outRow)
	bufs := make([][]float32, threads)
	raws := make([][]byte, threads)
	for t := range bufs {
		bufs[t] = make([]float32, cols)
	}
	for lo := 0; lo < rows; lo += step {
		hi := min(rows, lo+step)
		n := hi - lo
		var wg sync.WaitGroup
		errs := make([]error, threads)
		per := (n + threads - 1) / threads
		for t := range threads {
			a, b := lo+t*per, min(hi, lo+(t+1)*per)
			if a >= b {
				break
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				buf := bufs[t]
				for r := a; r < b; r++ {
					if err := row(buf, &raws[t], r); err != nil {
						errs[t] = err
						return
					}
					dst := out[(r-lo)*outRow : (r-lo+1)*outRow]
					if importance != nil {
						if err := quant.QuantizeRowImportance(typ, dst, buf, importance); err != nil {
							errs[t] = err
							return
						}
						continue
					}
					tr.QuantizeRef(dst, buf)
				}
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		if _, err := w.Write(out[:n*outRow]); err != nil {
			return err
		}
	}
	return nil
}

// grow returns b resized to n bytes, reallocating when its capacity is
// too small.
func grow(b []byte, n int64) []byte {
	if int64(cap(b)) < n {
		return make([]byte, n)
	}
	return b[:n]
}
