package format

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/qsf-llm/qsf/quant"
)

// WriterTensor describes one tensor to write: its name, shape (ggml order,
// see TensorInfo) and type. Its size follows from the shape and type.
type WriterTensor struct {
	Name  string
	Shape []uint64
	Type  quant.Type
	// Size is the data size of an I2_S tensor, whose layouts differ in
	// size (quant.I2SSize); it must be at least the one the shape gives.
	// Zero means that size; other types ignore it.
	Size uint64
}

// WriteGGUF writes a GGUF version 3 file to w: the header, the metadata md
// (which may be nil), the tensor descriptions with their offsets, and then
// the tensor data, which it asks for one tensor at a time by calling
// data(i, dw) for i = 0, 1, ... in order. data must write exactly the
// tensor's size in bytes to dw; WriteGGUF pads each tensor to the alignment
// (general.alignment in md, or DefaultAlignment). data may be nil if there
// are no tensors, in which case the file ends right after the metadata, as
// llama.cpp's vocab-only files do.
//
// Nothing but the header is buffered, so WriteGGUF can write files of any
// size. It validates md and tensors before writing anything.
func WriteGGUF(w io.Writer, md *Metadata, tensors []WriterTensor, data func(i int, w io.Writer) error) error {
	if md == nil {
		md = &Metadata{}
	}
	align := uint64(DefaultAlignment)
	if v, ok := md.Get(KeyAlignment); ok {
		a, err := checkAlignment(v)
		if err != nil {
			return fmt.Errorf("gguf: write: %s: %w", KeyAlignment, err)
		}
		align = a
	}
	for _, kv := range md.kvs {
		if err := checkValue(kv.Value, 0); err != nil {
			return fmt.Errorf("gguf: write: key %q: %w", kv.Key, err)
		}
	}
	sizes := make([]uint64, len(tensors))
	offsets := make([]uint64, len(tensors))
	names := make(map[string]bool, len(tensors))
	var next uint64
	for i, t := range tensors {
		if names[t.Name] {
			return fmt.Errorf("gguf: write: duplicate tensor name %q", t.Name)
		}
		names[t.Name] = true
		size, err := tensorSize(t.Shape, t.Type)
		if err != nil {
			return fmt.Errorf("gguf: write: tensor %q: %w", t.Name, err)
		}
		if t.Type == quant.I2_S && t.Size != 0 {
			if t.Size < size {
				return fmt.Errorf("gguf: write: tensor %q: I2_S size %d below %d", t.Name, t.Size, size)
			}
			size = t.Size
		}
		sizes[i], offsets[i] = size, next
		next = alignUp(next+size, align)
		if next > math.MaxInt64 {
			return fmt.Errorf("gguf: write: tensor data exceeds %d bytes", int64(math.MaxInt64))
		}
	}
	if data == nil && len(tensors) > 0 {
		return errors.New("gguf: write: nil data function")
	}

	bw := bufio.NewWriterSize(w, 64<<10)
	e := &encoder{w: bw}
	e.bytes([]byte(Magic))
	e.u32(Version)
	e.u64(uint64(len(tensors)))
	e.u64(uint64(md.Len()))
	for _, kv := range md.kvs {
		e.str(kv.Key)
		e.u32(uint32(kv.Value.typ))
		e.value(kv.Value)
	}
	for i, t := range tensors {
		e.str(t.Name)
		e.u32(uint32(len(t.Shape)))
		for _, d := range t.Shape {
			e.u64(d)
		}
		e.u32(uint32(t.Type))
		e.u64(offsets[i])
	}
	if len(tensors) > 0 {
		e.pad(align) // the data section is aligned; with no tensors there is none
	}
	for i := range tensors {
		if e.err != nil {
			break
		}
		start := e.n
		if err := data(i, e); err != nil {
			return fmt.Errorf("gguf: write: data of tensor %q: %w", tensors[i].Name, err)
		}
		if e.err != nil {
			break
		}
		if got := uint64(e.n - start); got != sizes[i] {
			return fmt.Errorf("gguf: write: data of tensor %q is %d bytes, want %d", tensors[i].Name, got, sizes[i])
		}
		e.pad(align)
	}
	if e.err != nil {
		return fmt.Errorf("gguf: write: %w", e.err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("gguf: write: %w", err)
	}
	return nil
}

// checkValue reports whether WriteGGUF can encode v.
func checkValue(v Value, depth int) error {
	if !v.typ.valid() {
		return fmt.Errorf("invalid value type %d", uint32(v.typ))
	}
	if v.typ != TypeArray {
		return nil
	}
	if depth >= maxDepth {
		return fmt.Errorf("arrays nested more than %d deep", maxDepth)
	}
	a, ok := v.arr.([]Value)
	if !ok {
		return nil // typed slices are valid by construction
	}
	for i, x := range a {
		if x.typ != TypeArray {
			return fmt.Errorf("element %d of an array of arrays is a %v", i, x.typ)
		}
		if err := checkValue(x, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// encoder writes little-endian fields, counting bytes and keeping the first
// error. It is also the io.Writer handed to the data callback.
type encoder struct {
	w       io.Writer
	n       int64
	err     error
	scratch [8]byte
}

func (e *encoder) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.n += int64(n)
	e.err = err
	return n, err
}

func (e *encoder) bytes(p []byte) { e.Write(p) }

func (e *encoder) u8(x uint8) { e.scratch[0] = x; e.Write(e.scratch[:1]) }

func (e *encoder) u16(x uint16) { le.PutUint16(e.scratch[:], x); e.Write(e.scratch[:2]) }

func (e *encoder) u32(x uint32) { le.PutUint32(e.scratch[:], x); e.Write(e.scratch[:4]) }

func (e *encoder) u64(x uint64) { le.PutUint64(e.scratch[:], x); e.Write(e.scratch[:8]) }

func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	if e.err == nil {
		_, e.err = io.WriteString(e.w, s)
		e.n += int64(len(s))
	}
}

var zeros [MaxAlignment]byte

func (e *encoder) pad(align uint64) {
	e.Write(zeros[:alignUp(uint64(e.n), align)-uint64(e.n)])
}

// scalar writes the payload of a scalar Value.
func (e *encoder) scalar(v Value) {
	switch v.typ.width() {
	case 1:
		e.u8(uint8(v.num))
	case 2:
		e.u16(uint16(v.num))
	case 4:
		if v.typ == TypeFloat32 {
			e.u32(math.Float32bits(float32(math.Float64frombits(v.num))))
		} else {
			e.u32(uint32(v.num))
		}
	case 8:
		e.u64(v.num)
	}
}

// value writes the payload of v (its type has been written already).
func (e *encoder) value(v Value) {
	switch v.typ {
	case TypeString:
		e.str(v.str)
		return
	case TypeArray:
	default:
		e.scalar(v)
		return
	}
	e.u32(uint32(v.elem))
	e.u64(uint64(v.Len()))
	e.elements(v)
}

// elements writes the elements of an array.
func (e *encoder) elements(v Value) {
	switch a := v.arr.(type) {
	case []string:
		for _, s := range a {
			e.str(s)
		}
		return
	case []Value:
		for _, x := range a {
			e.value(x)
		}
		return
	}
	for i, n := 0, v.Len(); i < n && e.err == nil; i++ {
		e.scalar(v.Index(i))
	}
}
