package stream

import (
	"fmt"
	"hash/crc32"
	"strings"
	"unsafe"

	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/quant"
)

// i2sConv is how a layer's I2_S matrix is streamed: the I/O goroutine
// reads its file data (the span's bytes) and, for I2SSiblingScale, its
// scales tensor into the conversion buffer, and converts it into the ring
// as quant.ConvertI2SInto does, into the type the resident model converts
// it to at load (the same quant.PlanI2S of the same scales, so the same
// bytes and logits).
type i2sConv struct {
	layout     quant.I2SLayout
	plan       quant.I2SPlan
	rows, cols int
	out        int // converted bytes
	// I2SSiblingScale: the scales tensor's file offset, size and type.
	scalesOff  int64
	scalesSize int
	scalesType quant.Type
}

// stageBytes returns the conversion buffer the matrix needs: its file
// data, then (sibling scales) the scales tensor and the scales as float32.
func (c *i2sConv) stageBytes(raw int) int {
	n := alignUp(raw)
	if c.layout == quant.I2SSiblingScale {
		n += alignUp(c.scalesSize) + alignUp(4*c.rows*c.cols/32)
	}
	return n
}

// planI2S decides how the I2_S matrix ti of f (at file offset off) is
// streamed, reading only what decides it: the tensor scale of
// I2STensorScale, the block scales of I2SBlockScale (the whole tensor,
// once) or the sibling scales tensor.
func planI2S(f *format.File, ti *format.TensorInfo, off int64, abs func(*format.TensorInfo) int64) (*i2sConv, error) {
	if !strings.HasPrefix(ti.Name, "blk.") || ti.Rows() <= 1 {
		return nil, fmt.Errorf("%w: %s is I2_S: streaming converts the layers' matrices only", quant.ErrUnsupported, ti.Name)
	}
	rows, cols := ti.Rows(), ti.Cols()
	n := rows * cols
	l, err := quant.DetectI2S(ti.Name, n, int(ti.Size))
	if err != nil {
		return nil, err
	}
	c := &i2sConv{layout: l, rows: rows, cols: cols}
	var ts float32
	var scales []float32
	switch l {
	case quant.I2STensorScale:
		var b [4]byte
		if _, err := f.ReadAt(b[:], off+int64(n/4)); err != nil {
			return nil, fmt.Errorf("stream: %s: %w", ti.Name, err)
		}
		ts = quant.I2STensorScaleOf(b[:], 0)
	case quant.I2SBlockScale:
		data := make([]byte, quant.I2SSize(l, n))
		if _, err := f.ReadAt(data, off); err != nil {
			return nil, fmt.Errorf("stream: %s: %w", ti.Name, err)
		}
		scales = make([]float32, n/32)
		quant.I2SBlockScales(scales, data)
	case quant.I2SSiblingScale:
		name := quant.I2SScalesName(ti.Name)
		si, ok := f.Tensor(name)
		if !ok {
			return nil, fmt.Errorf("%w: %s (scales of %v tensor %s) not in the file", ErrLayout, name, l, ti.Name)
		}
		if si.Type != quant.F32 && si.Type != quant.F16 {
			return nil, fmt.Errorf("%w: %s is %v, want F32 or F16", quant.ErrUnsupported, name, si.Type)
		}
		c.scalesOff, c.scalesType = abs(si), si.Type
		if c.scalesSize, err = quant.RowBytes(si.Type, int(si.Elements())); err != nil {
			return nil, fmt.Errorf("stream: %s: %w", name, err)
		}
		raw := make([]byte, c.scalesSize)
		if _, err := f.ReadAt(raw, c.scalesOff); err != nil {
			return nil, fmt.Errorf("stream: %s: %w", name, err)
		}
		scales = make([]float32, si.Elements())
		if err := quant.DequantizeRow(si.Type, scales, raw); err != nil {
			return nil, fmt.Errorf("stream: %s: %w", name, err)
		}
	}
	if c.plan, err = quant.PlanI2S(l, rows, cols, ts, scales); err != nil {
		return nil, fmt.Errorf("tensor %s (%v): %w", ti.Name, l, err)
	}
	c.out = c.plan.Bytes(rows, cols)
	return c, nil
}

// convertSpan reads the I2_S matrix of sp through the conversion buffer
// and converts it into dst at sp.bufOff (on the I/O goroutine).
func (s *Source) convertSpan(dst []byte, sp span) error {
	c := sp.conv
	raw := s.conv[:sp.size]
	if err := s.pread(raw, sp.off); err != nil {
		return err
	}
	var scales []float32
	if c.layout == quant.I2SSiblingScale {
		at := alignUp(sp.size)
		sraw := s.conv[at : at+c.scalesSize]
		if err := s.pread(sraw, c.scalesOff); err != nil {
			return err
		}
		at += alignUp(c.scalesSize)
		scales = float32s(s.conv[at : at+4*c.rows*c.cols/32])
		if err := quant.DequantizeRow(c.scalesType, scales, sraw); err != nil {
			return err
		}
	}
	return quant.ConvertI2SInto(dst[sp.bufOff:sp.bufOff+c.out], c.plan, c.layout, raw, c.rows, c.cols, scales)
}

// readConverted reads the spans of piece p of layer u, which has
// converted matrices, into dst, one at a time. An uncompressed QSF layer's
// CRCs are taken of the file's bytes (for a converted matrix, before its
// conversion), so checkRecord skips converted spans.
func (s *Source) readConverted(u, p int, dst []byte) error {
	lu := &s.lay.layers[u]
	spans := lu.pieces[p].spans
	for i, sp := range spans {
		var err error
		if sp.conv != nil {
			err = s.convertSpan(dst, sp)
			if err == nil && s.opts.VerifyCRC && lu.crcSegs != nil {
				s.matCRC[u][sp.mat] = crc32.Checksum(s.conv[:sp.size], s.crcTable)
				s.crcRead[u] |= 1 << sp.mat
			}
		} else {
			err = s.readSpans(dst, spans[i:i+1], 0, sp.size)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// ConvertBytes returns the size of the buffer the layers' I2_S matrices
// are read into before their conversion (0 when there are none).
func (lay *Layout) ConvertBytes() int { return lay.maxConv }

// I2SBytes returns the file bytes of the layers' I2_S matrices and the
// bytes they take converted (as streamed, and as a resident model holds
// them on the heap).
func (lay *Layout) I2SBytes() (file, converted int64) { return lay.i2sFile, lay.i2sOut }

func float32s(b []byte) []float32 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
}
