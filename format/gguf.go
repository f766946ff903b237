package format

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"strings"

	"github.com/qsf-llm/qsf/quant"
)

// Limits of the format as read and written by this package.
const (
	// Magic is the first four bytes of every GGUF file.
	Magic = "GGUF"
	// Version is the GGUF version WriteGGUF writes. ReadGGUF reads
	// versions 2 and 3, which share one layout.
	Version = 3
	// DefaultAlignment is the data alignment when general.alignment is
	// absent.
	DefaultAlignment = 32
	// MaxAlignment is the largest general.alignment accepted.
	MaxAlignment = 1 << 20
	// MaxDims is the largest number of tensor dimensions accepted (ggml
	// itself uses at most 4).
	MaxDims = 8
	// KeyAlignment is the metadata key holding the data alignment.
	KeyAlignment = "general.alignment"
	// KeyArchitecture is the metadata key naming the model architecture.
	KeyArchitecture = "general.architecture"

	maxDepth = 16 // deepest nesting of arrays accepted
)

var le = binary.LittleEndian

// TensorInfo describes one tensor of a GGUF file.
type TensorInfo struct {
	Name string
	// Shape is in ggml order: Shape[0] is the row length (ne0), Shape[1]
	// the number of rows (ne1), and so on.
	Shape  []uint64
	Type   quant.Type
	Offset uint64 // relative to the start of the data section
	Size   uint64 // bytes, computed from Shape and Type
}

// Elements returns the number of elements.
func (t *TensorInfo) Elements() uint64 {
	n := uint64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Cols returns the row length, Shape[0].
func (t *TensorInfo) Cols() int {
	if len(t.Shape) == 0 {
		return 1
	}
	return int(t.Shape[0])
}

// Rows returns the number of rows: the product of Shape[1:], 1 for a
// vector.
func (t *TensorInfo) Rows() int {
	n := 1
	for _, d := range t.Shape[min(1, len(t.Shape)):] {
		n *= int(d)
	}
	return n
}

// RowBytes returns the bytes one row occupies.
func (t *TensorInfo) RowBytes() int {
	if t.Type.BlockSize() == 0 {
		return 0
	}
	return t.Cols() / t.Type.BlockSize() * t.Type.BlockBytes()
}

// GGUF is the parsed header of a GGUF file: metadata and tensor
// descriptions. Tensor data is not read; see File.
type GGUF struct {
	Version    uint32
	Metadata   Metadata
	Tensors    []TensorInfo
	Alignment  uint64 // general.alignment, or DefaultAlignment
	DataOffset int64  // absolute file offset of the data section (past the end of a file without tensors)

	byName map[string]int
}

// Tensor returns the tensor called name.
func (g *GGUF) Tensor(name string) (*TensorInfo, bool) {
	if g.byName == nil {
		for i := range g.Tensors {
			if g.Tensors[i].Name == name {
				return &g.Tensors[i], true
			}
		}
		return nil, false
	}
	i, ok := g.byName[name]
	if !ok {
		return nil, false
	}
	return &g.Tensors[i], true
}

// Architecture returns general.architecture, or "" if it is absent.
func (g *GGUF) Architecture() string {
	s, _ := g.Metadata.String(KeyArchitecture)
	return s
}

// ReadGGUF parses the header of a GGUF file of the given size: version,
// metadata and tensor descriptions. It checks every count, length, shape
// and tensor range against size before allocating, so a malformed or
// hostile input yields an error (see ErrCorrupt and friends), never a panic
// or an allocation out of proportion to size.
func ReadGGUF(r io.ReaderAt, size int64) (*GGUF, error) {
	if size < 0 {
		return nil, fmt.Errorf("gguf: negative size %d", size)
	}
	d := &decoder{
		r:    bufio.NewReaderSize(io.NewSectionReader(r, 0, size), int(min(size, 64<<10))),
		size: size,
	}
	g := &GGUF{}
	if err := d.header(g); err != nil {
		return nil, err
	}
	return g, nil
}

// decoder reads GGUF fields sequentially, tracking the position so that
// every declared length can be checked against the bytes left.
type decoder struct {
	r    *bufio.Reader
	pos  int64
	size int64

	// What is being read, for error messages.
	section string // "header", "kv", "tensor info", ...
	index   int    // kv or tensor number
	name    string // key or tensor name once known
}

func (d *decoder) left() int64 { return d.size - d.pos }

func (d *decoder) where() string {
	switch {
	case d.section == "":
		return ""
	case d.name != "":
		return fmt.Sprintf("%s %d %q", d.section, d.index, d.name)
	case d.section == "kv" || d.section == "tensor info":
		return fmt.Sprintf("%s %d", d.section, d.index)
	}
	return d.section
}

func (d *decoder) errf(kinds []error, format string, args ...any) error {
	return d.errAt(d.pos, kinds, format, args...)
}

func (d *decoder) errAt(off int64, kinds []error, format string, args ...any) error {
	return &formatError{kinds: kinds, off: off, where: d.where(), msg: fmt.Sprintf(format, args...)}
}

func (d *decoder) corrupt(format string, args ...any) error {
	return d.errf([]error{ErrCorrupt}, format, args...)
}

// tooBig reports a declared length that does not fit in the rest of the
// file.
func (d *decoder) tooBig(format string, args ...any) error {
	return d.errf(truncatedOrCorrupt, format, args...)
}

// ioErr converts an error of the underlying reader.
func (d *decoder) ioErr(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return d.errf([]error{ErrTruncated}, "unexpected end of input")
	}
	return fmt.Errorf("gguf: reading at offset %d: %w", d.pos, err)
}

// peek returns the next n bytes (n <= buffer size) without consuming them.
func (d *decoder) peek(n int) ([]byte, error) {
	if int64(n) > d.left() {
		return nil, d.errf([]error{ErrTruncated}, "need %d bytes, %d left", n, d.left())
	}
	b, err := d.r.Peek(n)
	if err != nil {
		return nil, d.ioErr(err)
	}
	return b, nil
}

// skip consumes n bytes that peek returned.
func (d *decoder) skip(n int) {
	d.r.Discard(n)
	d.pos += int64(n)
}

func (d *decoder) u32() (uint32, error) {
	b, err := d.peek(4)
	if err != nil {
		return 0, err
	}
	x := le.Uint32(b)
	d.skip(4)
	return x, nil
}

func (d *decoder) u64() (uint64, error) {
	b, err := d.peek(8)
	if err != nil {
		return 0, err
	}
	x := le.Uint64(b)
	d.skip(8)
	return x, nil
}

// count reads a u64 count of items of at least minSize bytes each and checks
// that they fit in the rest of the file.
func (d *decoder) count(what string, minSize int) (int, error) {
	n, err := d.u64()
	if err != nil {
		return 0, err
	}
	if n > uint64(d.left())/uint64(minSize) {
		return 0, d.tooBig("%d %s need at least %d bytes each, only %d bytes left", n, what, minSize, d.left())
	}
	return int(n), nil
}

func (d *decoder) str() (string, error) {
	n, err := d.u64()
	if err != nil {
		return "", err
	}
	if n > uint64(d.left()) {
		return "", d.tooBig("string length %d exceeds the %d bytes left", n, d.left())
	}
	if n <= uint64(d.r.Size()) {
		b, err := d.peek(int(n))
		if err != nil {
			return "", err
		}
		s := string(b)
		d.skip(int(n))
		return s, nil
	}
	var sb strings.Builder
	sb.Grow(int(n))
	if _, err := io.CopyN(&sb, d.r, int64(n)); err != nil {
		return "", d.ioErr(err)
	}
	d.pos += int64(n)
	return sb.String(), nil
}

func (d *decoder) header(g *GGUF) error {
	d.section = "header"
	b, err := d.peek(4)
	if err != nil {
		if int64(len(Magic)) > d.size {
			return &formatError{kinds: []error{ErrBadMagic, ErrTruncated}, msg: fmt.Sprintf("file of %d bytes is too short to be GGUF", d.size)}
		}
		return err
	}
	if string(b) != Magic {
		return d.errf([]error{ErrBadMagic}, "magic %q, want %q", b, Magic)
	}
	d.skip(4)
	if g.Version, err = d.u32(); err != nil {
		return err
	}
	switch v := g.Version; {
	case v == 2 || v == 3:
	case v != 0 && v&0xffff == 0 && bits.ReverseBytes32(v) <= 3:
		return d.errf([]error{ErrVersion}, "big-endian GGUF (version %d byte-swapped) is not supported", bits.ReverseBytes32(v))
	default:
		return d.errf([]error{ErrVersion}, "version %d, want 2 or 3", v)
	}
	// Smallest kv: empty key (8), type (4), one-byte value. Smallest tensor
	// info: empty name (8), n_dims (4), one dim (8), type (4), offset (8).
	nTensors, err := d.count("tensor infos", 32)
	if err != nil {
		return err
	}
	nKV, err := d.count("key-value pairs", 13)
	if err != nil {
		return err
	}
	if err := d.metadata(g, nKV); err != nil {
		return err
	}
	if err := d.alignment(g); err != nil {
		return err
	}
	if err := d.tensorInfos(g, nTensors); err != nil {
		return err
	}
	return d.tensorRanges(g)
}

func (d *decoder) metadata(g *GGUF, n int) error {
	d.section = "kv"
	g.Metadata.kvs = make([]KV, 0, n)
	g.Metadata.index = make(map[string]int, n)
	for i := range n {
		d.index, d.name = i, ""
		key, err := d.str()
		if err != nil {
			return err
		}
		d.name = key
		t, err := d.u32()
		if err != nil {
			return err
		}
		v, err := d.value(ValueType(t), 0)
		if err != nil {
			return err
		}
		if !g.Metadata.add(key, v) {
			return d.corrupt("duplicate key")
		}
	}
	return nil
}

func (d *decoder) value(t ValueType, depth int) (Value, error) {
	switch t {
	case TypeString:
		s, err := d.str()
		return StringValue(s), err
	case TypeArray:
		return d.array(depth + 1)
	}
	if !t.valid() {
		return Value{}, d.corrupt("unknown value type %d", uint32(t))
	}
	b, err := d.peek(t.width())
	if err != nil {
		return Value{}, err
	}
	v := decodeScalar(t, b)
	d.skip(t.width())
	return v, nil
}

func decodeScalar(t ValueType, b []byte) Value {
	switch t {
	case TypeUint8:
		return Uint8Value(b[0])
	case TypeInt8:
		return Int8Value(int8(b[0]))
	case TypeBool:
		return BoolValue(b[0] != 0)
	case TypeUint16:
		return Uint16Value(le.Uint16(b))
	case TypeInt16:
		return Int16Value(int16(le.Uint16(b)))
	case TypeUint32:
		return Uint32Value(le.Uint32(b))
	case TypeInt32:
		return Int32Value(int32(le.Uint32(b)))
	case TypeFloat32:
		return Float32Value(math.Float32frombits(le.Uint32(b)))
	case TypeUint64:
		return Uint64Value(le.Uint64(b))
	case TypeInt64:
		return Int64Value(int64(le.Uint64(b)))
	default: // TypeFloat64
		return Float64Value(math.Float64frombits(le.Uint64(b)))
	}
}

func (d *decoder) array(depth int) (Value, error) {
	if depth > maxDepth {
		return Value{}, d.corrupt("arrays nested more than %d deep", maxDepth)
	}
	et, err := d.u32()
	if err != nil {
		return Value{}, err
	}
	elem := ValueType(et)
	if !elem.valid() {
		return Value{}, d.corrupt("array of unknown value type %d", et)
	}
	n, err := d.count(elem.String()+" array elements", elem.minSize())
	if err != nil {
		return Value{}, err
	}
	switch elem {
	case TypeString:
		a := make([]string, n)
		for i := range a {
			if a[i], err = d.str(); err != nil {
				return Value{}, err
			}
		}
		return StringsValue(a), nil
	case TypeArray:
		a := make([]Value, n)
		for i := range a {
			if a[i], err = d.array(depth + 1); err != nil {
				return Value{}, err
			}
		}
		return ArraysValue(a...), nil
	case TypeUint8:
		return numbers(d, n, Uint8sValue, func(b []byte) uint8 { return b[0] })
	case TypeInt8:
		return numbers(d, n, Int8sValue, func(b []byte) int8 { return int8(b[0]) })
	case TypeBool:
		return numbers(d, n, BoolsValue, func(b []byte) bool { return b[0] != 0 })
	case TypeUint16:
		return numbers(d, n, Uint16sValue, le.Uint16)
	case TypeInt16:
		return numbers(d, n, Int16sValue, func(b []byte) int16 { return int16(le.Uint16(b)) })
	case TypeUint32:
		return numbers(d, n, Uint32sValue, le.Uint32)
	case TypeInt32:
		return numbers(d, n, Int32sValue, func(b []byte) int32 { return int32(le.Uint32(b)) })
	case TypeFloat32:
		return numbers(d, n, Float32sValue, func(b []byte) float32 { return math.Float32frombits(le.Uint32(b)) })
	case TypeUint64:
		return numbers(d, n, Uint64sValue, le.Uint64)
	case TypeInt64:
		return numbers(d, n, Int64sValue, func(b []byte) int64 { return int64(le.Uint64(b)) })
	default: // TypeFloat64
		return numbers(d, n, Float64sValue, func(b []byte) float64 { return math.Float64frombits(le.Uint64(b)) })
	}
}

// numbers reads n fixed-width elements, decoding each with dec, and wraps
// them with mk. The caller has checked that n elements fit in the file.
func numbers[T any](d *decoder, n int, mk func([]T) Value, dec func([]byte) T) (Value, error) {
	var zero Value
	width := mk(nil).elem.width()
	a := make([]T, n)
	for i := 0; i < n; {
		k := min(n-i, d.r.Size()/width)
		b, err := d.peek(k * width)
		if err != nil {
			return zero, err
		}
		for j := range k {
			a[i+j] = dec(b[j*width:])
		}
		d.skip(k * width)
		i += k
	}
	return mk(a), nil
}

// alignment sets g.Alignment from general.alignment.
func (d *decoder) alignment(g *GGUF) error {
	g.Alignment = DefaultAlignment
	v, ok := g.Metadata.Get(KeyAlignment)
	if !ok {
		return nil
	}
	d.section, d.name = "kv", KeyAlignment
	d.index = g.Metadata.index[KeyAlignment]
	a, err := checkAlignment(v)
	if err != nil {
		return d.corrupt("%v", err)
	}
	g.Alignment = a
	return nil
}

func checkAlignment(v Value) (uint64, error) {
	a, ok := v.Uint()
	if !ok {
		return 0, fmt.Errorf("alignment is %v %v, want a positive integer", v.Type(), v)
	}
	if a == 0 || a&(a-1) != 0 || a > MaxAlignment {
		return 0, fmt.Errorf("alignment %d is not a power of two up to %d", a, MaxAlignment)
	}
	return a, nil
}

func (d *decoder) tensorInfos(g *GGUF, n int) error {
	d.section = "tensor info"
	g.Tensors = make([]TensorInfo, n)
	g.byName = make(map[string]int, n)
	for i := range g.Tensors {
		t := &g.Tensors[i]
		d.index, d.name = i, ""
		var err error
		if t.Name, err = d.str(); err != nil {
			return err
		}
		d.name = t.Name
		if _, dup := g.byName[t.Name]; dup {
			return d.corrupt("duplicate tensor name")
		}
		g.byName[t.Name] = i
		nd, err := d.u32()
		if err != nil {
			return err
		}
		if nd == 0 || nd > MaxDims {
			return d.corrupt("%d dimensions, want 1 to %d", nd, MaxDims)
		}
		t.Shape = make([]uint64, nd)
		for j := range t.Shape {
			if t.Shape[j], err = d.u64(); err != nil {
				return err
			}
		}
		typ, err := d.u32()
		if err != nil {
			return err
		}
		t.Type = quant.Type(typ)
		if t.Offset, err = d.u64(); err != nil {
			return err
		}
		if t.Size, err = tensorSize(t.Shape, t.Type); err != nil {
			return &formatError{kinds: []error{kindOf(err)}, off: d.pos, where: d.where(), msg: err.Error()}
		}
	}
	return nil
}

// shapeError is a tensorSize failure; unknown marks an unknown type.
type shapeError struct {
	msg     string
	unknown bool
}

func (e *shapeError) Error() string { return e.msg }

func kindOf(err error) error {
	if e, ok := err.(*shapeError); ok && e.unknown {
		return ErrUnknownType
	}
	return ErrCorrupt
}

// tensorSize returns the bytes a tensor of the given shape and type
// occupies, checking that the type is known, every dimension and the
// element count fit in an int64, and rows are whole blocks.
func tensorSize(shape []uint64, t quant.Type) (uint64, error) {
	if !t.Known() {
		return 0, &shapeError{msg: fmt.Sprintf("tensor type %v", t), unknown: true}
	}
	if len(shape) == 0 || len(shape) > MaxDims {
		return 0, &shapeError{msg: fmt.Sprintf("%d dimensions, want 1 to %d", len(shape), MaxDims)}
	}
	n := uint64(1)
	for _, dim := range shape {
		hi, lo := bits.Mul64(n, dim)
		if dim > math.MaxInt64 || hi != 0 || lo > math.MaxInt64 {
			return 0, &shapeError{msg: fmt.Sprintf("shape %v overflows", shape)}
		}
		n = lo
	}
	bs, bb := uint64(t.BlockSize()), uint64(t.BlockBytes())
	if shape[0]%bs != 0 {
		return 0, &shapeError{msg: fmt.Sprintf("row length %d is not a whole number of %v blocks of %d", shape[0], t, bs)}
	}
	hi, size := bits.Mul64(n/bs, bb)
	if hi != 0 || size > math.MaxInt64 {
		return 0, &shapeError{msg: fmt.Sprintf("shape %v of %v overflows", shape, t)}
	}
	return size, nil
}

// tensorRanges sets g.DataOffset and checks that every tensor is aligned,
// inside the file and disjoint from the others.
func (d *decoder) tensorRanges(g *GGUF) error {
	d.section, d.name = "data", ""
	g.DataOffset = int64(alignUp(uint64(d.pos), g.Alignment))
	if len(g.Tensors) == 0 {
		return nil
	}
	if g.DataOffset > d.size {
		return d.errf([]error{ErrTruncated}, "data section starts at %d, past the end of the %d-byte file", g.DataOffset, d.size)
	}
	room := uint64(d.size - g.DataOffset)
	order := make([]int, len(g.Tensors))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		ta, tb := &g.Tensors[a], &g.Tensors[b]
		if ta.Offset != tb.Offset {
			if ta.Offset < tb.Offset {
				return -1
			}
			return 1
		}
		return int(min(ta.Size, 1)) - int(min(tb.Size, 1)) // empty tensors first
	})
	var prev *TensorInfo
	for _, i := range order {
		t := &g.Tensors[i]
		d.section, d.index, d.name = "tensor info", i, t.Name
		at := g.DataOffset + int64(min(t.Offset, room))
		if t.Offset%g.Alignment != 0 {
			return d.errAt(at, []error{ErrCorrupt}, "data offset %d is not a multiple of the alignment %d", t.Offset, g.Alignment)
		}
		if t.Offset > room || t.Size > room-t.Offset {
			return d.errAt(at, truncatedOrCorrupt, "data [%d, +%d) extends past the end of the data section (%d bytes)", t.Offset, t.Size, room)
		}
		if t.Size == 0 {
			continue
		}
		if prev != nil && prev.Offset+prev.Size > t.Offset {
			return d.errAt(at, []error{ErrCorrupt}, "data overlaps tensor %q", prev.Name)
		}
		prev = t
	}
	// An I2_S tensor's size is not fixed by its shape (quant.DetectI2S
	// tells its layout from it): its data spans up to the next tensor's.
	for k, i := range order {
		t := &g.Tensors[i]
		if t.Type != quant.I2_S || t.Size == 0 {
			continue
		}
		end := room
		for _, j := range order[k+1:] {
			if u := &g.Tensors[j]; u.Size > 0 && u.Offset > t.Offset {
				end = u.Offset
				break
			}
		}
		t.Size = end - t.Offset
	}
	return nil
}

func alignUp(x, a uint64) uint64 { return (x + a - 1) / a * a }
