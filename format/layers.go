package format

import (
	"strconv"
	"strings"
)

// TensorOffset returns the file offset of t's data, a tensor of f.Tensors.
// For a tensor of an LZ4-compressed QSF layer, whose data exists only once
// the layer is decompressed, it is the offset of the layer's stored bytes
// (see LayerTensors for where the tensor lies in the layer).
func (f *File) TensorOffset(t *TensorInfo) int64 {
	if f.qsf != nil {
		return int64(t.Offset)
	}
	return f.DataOffset + int64(t.Offset)
}

// LayerTensor is one tensor of a layer (see File.LayerTensors).
type LayerTensor struct {
	*TensorInfo
	// At is where the tensor's data begins: in a QSF file, from the start
	// of its layer's record (decompressed; see File.LayerRecord); in a
	// GGUF file, which has no records, from the start of the file.
	At int64
}

// LayerTensors returns the tensors of layers 0 to n-1 (those named
// "blk.<layer>."), each layer's in the order of the file.
func (f *File) LayerTensors(n int) [][]LayerTensor {
	out := make([][]LayerTensor, n)
	if q := f.qsf; q != nil {
		for l, ts := range q.LayerTensors[:min(n, len(q.LayerTensors))] {
			for _, t := range ts {
				out[l] = append(out[l], LayerTensor{&f.Tensors[f.byName[t.Name]], int64(t.DataOffset)})
			}
		}
		return out
	}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		rest, ok := strings.CutPrefix(t.Name, "blk.")
		if !ok {
			continue
		}
		s, _, _ := strings.Cut(rest, ".")
		l, err := strconv.Atoi(s)
		if err != nil || l < 0 || l >= n {
			continue
		}
		out[l] = append(out[l], LayerTensor{t, f.TensorOffset(t)})
	}
	return out
}

// LayerRecord returns the QSF index entry of layer l, the record that
// holds the layer's tensors, or false for a GGUF file (or no such layer).
func (f *File) LayerRecord(l int) (LayerEntry, bool) {
	if f.qsf == nil || l < 0 || l >= len(f.qsf.Layers) {
		return LayerEntry{}, false
	}
	return f.qsf.Layers[l], true
}

// MetadataBytes returns the size of the parts of the file a reader parses
// into memory: a GGUF file's header, metadata and tensor directory, or a
// QSF file's sections other than the embedding and final tensors.
func (f *File) MetadataBytes() int64 {
	if f.qsf == nil {
		return f.DataOffset
	}
	var n int64
	for _, s := range f.qsf.sections {
		if s.Name != "embedding" && s.Name != "final" {
			n += int64(s.Length)
		}
	}
	return n
}
