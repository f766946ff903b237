// Package stream runs a model whose weights do not fit in memory: the
// layers (and, when it does not fit either, the LM head) are read from the
// file into one or two buffers as the forward pass needs them, an I/O
// goroutine reading the next while the current one computes, and the
// token embedding is read a row at a time through a small LRU.
//
// A Layout, computed from the file's metadata alone, says where every
// layer's tensors lie and how large the buffers must be; a Source, one per
// session, owns the buffers (in an arena), the I/O goroutine and the
// statistics, and implements model.WeightSource.
package stream

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/model"
	"github.com/qsf-llm/qsf/quant"
)

// ErrLayout is returned for a file whose tensors cannot be streamed (for
// example a layer tensor outside the file).
var ErrLayout = errors.New("stream: cannot stream this file")

// span is one pread of a unit: size bytes at file offset off into the
// buffer at bufOff.
type span struct {
	off    int64
	bufOff int
	size   int
}

type matRef struct {
	field  int // index into model.Block.Matrices
	bufOff int
	size   int
}

type vecRef struct {
	dst    []float32
	typ    quant.Type
	bufOff int
	size   int
}

// layerUnit is how one layer is read.
type layerUnit struct {
	spans []span // the byte ranges read: GGUF tensors, or the QSF record
	qsf   bool   // QSF: the layer record (possibly LZ4-compressed)
	entry format.LayerEntry
	bytes int // buffer bytes
	mats  []matRef
	vecs  []vecRef
	once  sync.Once // decodes vecs into the template on first load
}

// Layout is where the streamed weights lie in a file, computed from its
// metadata without reading any weights. It is immutable after NewLayout
// and shared by the Sources of one model.
type Layout struct {
	Hparams model.Hparams
	// Weights is the template: the resident vectors (norms, biases, filled
	// for the layers as they are first read) and the matrices' shapes,
	// whose Data is empty.
	Weights *model.Weights

	layers []layerUnit

	headOff      int64 // file offset of the LM head (output, or token_embd when tied)
	headRowBytes int
	embdOff      int64
	embdRowBytes int
	maxStored    int // largest compressed QSF layer record (0 for GGUF)
	maxLayer     int
}

var placeholder = make([]byte, 0, 1)

// NewLayout computes the streaming layout of f for the model hp (parsed
// from f's metadata). f may be opened without a mapping; only small
// resident tensors (output norm, learned positions) are read.
func NewLayout(f *format.File, hp *model.Hparams) (*Layout, error) {
	lay := &Layout{Hparams: *hp, layers: make([]layerUnit, hp.Layers)}
	q := f.QSF()
	abs := func(t *format.TensorInfo) int64 {
		if q != nil {
			return int64(t.Offset)
		}
		return f.DataOffset + int64(t.Offset)
	}
	var zero []byte
	for _, t := range f.Tensors {
		if len(t.Shape) < 2 || t.Shape[1] <= 1 {
			zero = make([]byte, max(len(zero), int(t.Size)))
		}
	}
	vectors := map[string][]float32{}
	lookup := func(name string) (model.Tensor, bool, error) {
		ti, ok := f.Tensor(name)
		if !ok {
			return model.Tensor{}, false, nil
		}
		t := model.Tensor{Name: name, Type: ti.Type, Rows: ti.Rows(), Cols: ti.Cols()}
		switch {
		case ti.Rows() > 1 && name != "position_embd.weight":
			t.Data = placeholder
		case strings.HasPrefix(name, "blk."):
			t.Data = zero[:ti.Size]
		default:
			d, err := f.TensorData(ti)
			if err != nil {
				return t, false, err
			}
			t.Data = d
		}
		return t, true, nil
	}
	w, err := model.LoadWeightsWith(hp, lookup, func(name string, v []float32) { vectors[name] = v })
	if err != nil {
		return nil, err
	}
	lay.Weights = w

	embd, _ := f.Tensor("token_embd.weight")
	lay.embdOff = abs(embd)
	lay.embdRowBytes = int(embd.Size) / embd.Rows()
	lay.headOff, lay.headRowBytes = lay.embdOff, lay.embdRowBytes
	if out, ok := f.Tensor("output.weight"); ok && !w.TiedOutput {
		lay.headOff = abs(out)
		lay.headRowBytes = int(out.Size) / out.Rows()
	}

	// The tensors of each layer, by name.
	type tensor struct {
		name   string
		typ    quant.Type
		off    int64 // file offset (GGUF) or payload offset (QSF)
		size   int
		vector bool
	}
	perLayer := make([][]tensor, hp.Layers)
	if q != nil {
		for i, ts := range q.LayerTensors {
			if i >= hp.Layers {
				break
			}
			for _, t := range ts {
				perLayer[i] = append(perLayer[i], tensor{t.Name, t.Type, int64(t.DataOffset), int(t.Size), t.Rows() <= 1})
			}
		}
	} else {
		for i := range f.Tensors {
			t := &f.Tensors[i]
			rest, ok := strings.CutPrefix(t.Name, "blk.")
			if !ok {
				continue
			}
			n, _, _ := strings.Cut(rest, ".")
			l, err := strconv.Atoi(n)
			if err != nil || l < 0 || l >= hp.Layers {
				continue
			}
			perLayer[l] = append(perLayer[l], tensor{t.Name, t.Type, abs(t), int(t.Size), t.Rows() <= 1})
		}
	}

	for l := range lay.layers {
		u := &lay.layers[l]
		ts := perLayer[l]
		if len(ts) == 0 {
			return nil, fmt.Errorf("%w: layer %d has no tensors", ErrLayout, l)
		}
		bufOff := map[string]int{}
		if q != nil {
			u.qsf, u.entry = true, q.Layers[l]
			u.bytes = int(u.entry.Size)
			u.spans = []span{{off: int64(u.entry.Offset), size: int(u.entry.StoredSize)}}
			if u.entry.Compression != format.CompressNone {
				lay.maxStored = max(lay.maxStored, int(u.entry.StoredSize))
			}
			for _, t := range ts {
				if int(t.off)+t.size > u.bytes {
					return nil, fmt.Errorf("%w: %s lies outside its layer", ErrLayout, t.name)
				}
				bufOff[t.name] = int(t.off)
			}
		} else {
			// One pread per run of adjacent tensors.
			lo, hi, sum := ts[0].off, ts[0].off, 0
			for _, t := range ts {
				lo, hi = min(lo, t.off), max(hi, t.off+int64(t.size))
				sum += t.size
			}
			if hi-lo <= int64(sum)+int64(sum)/16+65536 {
				u.spans = []span{{off: lo, size: int(hi - lo)}}
				u.bytes = int(hi - lo)
				for _, t := range ts {
					bufOff[t.name] = int(t.off - lo)
				}
			} else {
				at := 0
				for _, t := range ts {
					u.spans = append(u.spans, span{off: t.off, bufOff: at, size: t.size})
					bufOff[t.name] = at
					at += (t.size + 63) &^ 63
				}
				u.bytes = at
			}
		}
		lay.maxLayer = max(lay.maxLayer, u.bytes)
		byName := map[string]tensor{}
		for _, t := range ts {
			byName[t.name] = t
		}
		for i, m := range w.Blocks[l].Matrices() {
			if m.Data == nil {
				continue
			}
			t, ok := byName[m.Name]
			if !ok {
				return nil, fmt.Errorf("%w: %s not in layer %d", ErrLayout, m.Name, l)
			}
			u.mats = append(u.mats, matRef{field: i, bufOff: bufOff[t.name], size: t.size})
		}
		for _, t := range ts {
			if v, ok := vectors[t.name]; ok {
				u.vecs = append(u.vecs, vecRef{dst: v, typ: t.typ, bufOff: bufOff[t.name], size: t.size})
			}
		}
	}
	return lay, nil
}

// LayerBytes returns the buffer size a layer needs (the largest layer).
func (lay *Layout) LayerBytes() int { return lay.maxLayer }

// LayerBytesTotal returns the bytes read for one pass over all layers.
func (lay *Layout) LayerBytesTotal() int64 {
	var n int64
	for i := range lay.layers {
		u := &lay.layers[i]
		if u.qsf {
			n += int64(u.entry.StoredSize)
		} else {
			for _, s := range u.spans {
				n += int64(s.size)
			}
		}
	}
	return n
}

// DecompressBytes returns the size of the buffer compressed QSF layers are
// read into before decompression (0 when no layer is compressed).
func (lay *Layout) DecompressBytes() int { return lay.maxStored }

// HeadBytes returns the size of the LM head and of one of its rows.
func (lay *Layout) HeadBytes() (total int64, row int) {
	return int64(lay.headRowBytes) * int64(lay.Hparams.Vocab), lay.headRowBytes
}

// EmbeddingRowBytes returns the size of one token embedding row.
func (lay *Layout) EmbeddingRowBytes() int { return lay.embdRowBytes }

// HeadChunkRows returns how many LM head rows fit in a buffer of n bytes.
func (lay *Layout) HeadChunkRows(n int) int { return n / lay.headRowBytes }
