package convert

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"

	"github.com/qsf-llm/qsf/quant"
)

// maxSafetensorsHeader bounds the JSON header of a safetensors file.
const maxSafetensorsHeader = 100 << 20

// stTensor is one tensor of a safetensors file.
type stTensor struct {
	Name   string
	DType  string
	Shape  []uint64
	Type   quant.Type // F32, F16 or BF16
	file   io.ReaderAt
	offset int64 // absolute offset of the data
	size   int64
}

// readAt reads n bytes of the tensor's data at byte offset off.
func (t *stTensor) readAt(off, n int64) ([]byte, error) {
	if n < 0 || n > t.size {
		return nil, fmt.Errorf("%w: %s: read of %d bytes outside %d bytes", ErrInput, t.Name, n, t.size)
	}
	return t.readInto(make([]byte, n), off)
}

// readInto fills b with the tensor's data at byte offset off.
func (t *stTensor) readInto(b []byte, off int64) ([]byte, error) {
	n := int64(len(b))
	if off < 0 || off+n > t.size {
		return nil, fmt.Errorf("%w: %s: read [%d, +%d) outside %d bytes", ErrInput, t.Name, off, n, t.size)
	}
	if _, err := t.file.ReadAt(b, t.offset+off); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInput, t.Name, err)
	}
	return b, nil
}

// f32 reads the whole tensor as float32.
func (t *stTensor) f32() ([]float32, error) {
	b, err := t.readAt(0, t.size)
	if err != nil {
		return nil, err
	}
	tr, err := quant.Lookup(t.Type)
	if err != nil {
		return nil, err
	}
	out := make([]float32, t.size/int64(t.Type.BlockBytes()))
	tr.Dequantize(out, b)
	return out, nil
}

// readSafetensors parses the header of the safetensors file f (of the
// given size) and returns its tensors sorted by offset.
func readSafetensors(f io.ReaderAt, size int64) ([]*stTensor, error) {
	var nb [8]byte
	if _, err := f.ReadAt(nb[:], 0); err != nil {
		return nil, fmt.Errorf("%w: safetensors header length: %v", ErrInput, err)
	}
	n := binary.LittleEndian.Uint64(nb[:])
	if n > uint64(size-8) || n > maxSafetensorsHeader {
		return nil, fmt.Errorf("%w: safetensors header of %d bytes in a %d-byte file", ErrInput, n, size)
	}
	hdr := make([]byte, n)
	if _, err := f.ReadAt(hdr, 8); err != nil && err != io.EOF {
		return nil, fmt.Errorf("%w: safetensors header: %v", ErrInput, err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(hdr, &raw); err != nil {
		return nil, fmt.Errorf("%w: safetensors header: %v", ErrInput, err)
	}
	base := int64(8 + n)
	var ts []*stTensor
	for name, msg := range raw {
		if name == "__metadata__" {
			continue
		}
		var e struct {
			DType   string   `json:"dtype"`
			Shape   []uint64 `json:"shape"`
			Offsets []int64  `json:"data_offsets"`
		}
		if err := json.Unmarshal(msg, &e); err != nil {
			return nil, fmt.Errorf("%w: safetensors tensor %q: %v", ErrInput, name, err)
		}
		t := &stTensor{Name: name, DType: e.DType, Shape: e.Shape, file: f}
		if len(e.Offsets) != 2 || e.Offsets[0] < 0 || e.Offsets[1] < e.Offsets[0] || e.Offsets[1] > size-base {
			return nil, fmt.Errorf("%w: safetensors tensor %q: data offsets %v outside the file", ErrInput, name, e.Offsets)
		}
		t.offset, t.size = base+e.Offsets[0], e.Offsets[1]-e.Offsets[0]
		width := int64(0)
		switch e.DType {
		case "F32":
			t.Type, width = quant.F32, 4
		case "F16":
			t.Type, width = quant.F16, 2
		case "BF16":
			t.Type, width = quant.BF16, 2
		}
		elems := int64(1)
		for _, d := range e.Shape {
			if d > math.MaxInt32 || elems > math.MaxInt64/int64(max(d, 1)) {
				return nil, fmt.Errorf("%w: safetensors tensor %q: shape %v overflows", ErrInput, name, e.Shape)
			}
			elems *= int64(d)
		}
		if width != 0 && elems*width != t.size {
			return nil, fmt.Errorf("%w: safetensors tensor %q: %d bytes for shape %v of %s", ErrInput, name, t.size, e.Shape, e.DType)
		}
		ts = append(ts, t)
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].offset < ts[j].offset })
	return ts, nil
}
