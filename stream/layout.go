// Package stream runs a model whose weights do not fit in memory: the
// layers' matrices (and, when it does not fit either, the LM head) are
// brought in from the file through one ring buffer as the forward pass
// needs them, an I/O goroutine filling the space each matrix group leaves
// as soon as the forward pass is done with it, and the token embedding is
// read a row at a time through a small LRU. Where it can, the I/O
// goroutine maps the file's pages in place of copying them (see
// mapped_linux.go); the ring then only bounds the pages mapped at once.
//
// A Layout, computed from the file's metadata alone, says where every
// layer's tensors lie and how large the ring must be at least; a Source,
// one per session, owns the ring (in an arena), the I/O goroutine and the
// statistics, and implements model.WeightSource.
package stream

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
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

// span is one pread of a piece: size bytes at file offset off into the
// piece at bufOff.
type span struct {
	off    int64
	bufOff int
	size   int
	mat    int      // uncompressed QSF: the matrix's index in the layer's CRCs
	conv   *i2sConv // an I2_S matrix: size bytes of it, converted into the ring
}

type matRef struct {
	field  int // index into model.Block.Matrices
	bufOff int // in the piece
	size   int
}

type vecRef struct {
	dst    []float32
	typ    quant.Type
	bufOff int
	size   int
}

// piece is what one slot of the ring holds: the matrices of one or more
// consecutive stages of a layer, a whole QSF layer record, or a chunk of
// the LM head.
type piece struct {
	spans       []span // the preads, in the order they are issued
	bytes       int    // ring bytes, a multiple of ringAlign
	first, last model.Stage
	mats        []matRef
	conv        bool // some spans convert I2_S (readConverted)
}

// ringAlign is the alignment of every piece (and every matrix in it) in
// the ring.
const ringAlign = 64

func alignUp(n int) int { return (n + ringAlign - 1) &^ (ringAlign - 1) }

// layerUnit is how one layer is read: a piece per stage (GGUF and
// uncompressed QSF, each matrix read at its own offset), or one piece for
// an LZ4-compressed QSF record, which is decompressed whole.
type layerUnit struct {
	pieces []piece
	stage  [model.NumStages]int8 // the piece holding each stage
	record bool                  // pieces[0] is the compressed QSF record
	entry  format.LayerEntry     // QSF: the layer's index entry
	vecs   []vecRef              // record layers: vectors decoded from the record
	// Uncompressed QSF: the record's segments in file order, for checking
	// its CRC from the CRCs of the matrices as they are read.
	crcSegs []crcSeg
	nmats   int
	once    sync.Once // decodes vecs into the template on first load
	bytes   int       // ring bytes of all pieces
}

// Layout is where the streamed weights lie in a file, computed from its
// metadata without reading any matrix. It is immutable after NewLayout
// and shared by the Sources of one model.
type Layout struct {
	Hparams model.Hparams
	// Weights is the template: the resident vectors (norms, biases; those
	// inside compressed QSF records are filled as the layers are first
	// read) and the matrices' shapes, whose Data is empty.
	Weights *model.Weights

	layers []layerUnit

	headOff      int64 // file offset of the LM head (output, or token_embd when tied)
	headRowBytes int
	embdOff      int64
	embdRowBytes int
	maxStored    int // largest compressed QSF layer record (0 for GGUF)
	maxLayer     int // ring bytes of the largest layer
	maxPiece     int // ring bytes of the largest layer piece
	readBytes    int64
	maxConv      int   // the I2_S conversion buffer (0: no I2_S)
	i2sFile      int64 // file bytes of the I2_S matrices
	i2sOut       int64 // their converted bytes
}

var placeholder = make([]byte, 0, 1)

// NewLayout computes the streaming layout of f for the model hp (parsed
// from f's metadata). f may be opened without a mapping; only small
// resident tensors (output norm, learned positions) are read.
func NewLayout(f *format.File, hp *model.Hparams) (*Layout, error) {
	if hp.MoE.Experts > 0 {
		return nil, fmt.Errorf("%w: a mixture of experts streams its experts (NewExpertLayout), not its layers", ErrLayout)
	}
	lay := &Layout{Hparams: *hp, layers: make([]layerUnit, hp.Layers)}
	var zero []byte
	for _, t := range f.Tensors {
		if len(t.Shape) < 2 || t.Shape[1] <= 1 {
			zero = make([]byte, max(len(zero), int(t.Size)))
		}
	}
	vectors := map[string][]float32{}
	convs := map[string]*i2sConv{}
	lookup := func(name string) (model.Tensor, bool, error) {
		ti, ok := f.Tensor(name)
		if !ok {
			return model.Tensor{}, false, nil
		}
		t := model.Tensor{Name: name, Type: ti.Type, Rows: ti.Rows(), Cols: ti.Cols()}
		if ti.Type == quant.I2_S {
			if rec, ok := f.LayerRecord(layerOf(name)); ok && rec.Compression != format.CompressNone {
				return t, false, fmt.Errorf("%w: %s is I2_S in a compressed QSF layer, which does not stream (an uncompressed one does)", quant.ErrUnsupported, name)
			}
			c, err := planI2S(f, ti, f.TensorOffset(ti), f.TensorOffset)
			if err != nil {
				return t, false, err
			}
			convs[name] = c
			t.Type, t.Data = c.plan.Type, placeholder
			if c.plan.Scale != 1 {
				t.Scale = c.plan.Scale
			}
			return t, true, nil
		}
		switch {
		case strings.HasSuffix(name, quant.OutlierSuffix):
			d, err := outlierTable(f, ti, hp.Layers)
			if err != nil {
				return t, false, err
			}
			t.Data = d
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
	lay.embdOff = f.TensorOffset(embd)
	lay.embdRowBytes = int(embd.Size) / embd.Rows()
	lay.headOff, lay.headRowBytes = lay.embdOff, lay.embdRowBytes
	if out, ok := f.Tensor("output.weight"); ok && !w.TiedOutput {
		lay.headOff = f.TensorOffset(out)
		lay.headRowBytes = int(out.Size) / out.Rows()
	}

	// The tensors of each layer: off is from the start of the layer's
	// QSF record, or of a GGUF file.
	type tensor struct {
		name   string
		typ    quant.Type
		off    int64
		size   int
		vector bool
	}
	perLayer := make([][]tensor, hp.Layers)
	for l, ts := range f.LayerTensors(hp.Layers) {
		for _, t := range ts {
			perLayer[l] = append(perLayer[l], tensor{t.Name, t.Type, t.At, int(t.Size), t.Rows() <= 1})
		}
	}

	var scratch []byte
	for l := range lay.layers {
		u := &lay.layers[l]
		ts := perLayer[l]
		if len(ts) == 0 {
			return nil, fmt.Errorf("%w: layer %d has no tensors", ErrLayout, l)
		}
		byName := map[string]tensor{}
		for _, t := range ts {
			byName[t.name] = t
		}
		blk := &w.Blocks[l]
		rec, isQSF := f.LayerRecord(l)
		if isQSF && rec.Compression != format.CompressNone {
			// One piece: the record, decompressed into the ring.
			u.record, u.entry = true, rec
			size := int(u.entry.Size)
			lay.maxStored = max(lay.maxStored, int(u.entry.StoredSize))
			pc := piece{spans: []span{{off: int64(u.entry.Offset), size: int(u.entry.StoredSize)}}, bytes: alignUp(size),
				first: model.StageQKV, last: model.NumStages - 1}
			for _, t := range ts {
				if int(t.off)+t.size > size {
					return nil, fmt.Errorf("%w: %s lies outside its layer", ErrLayout, t.name)
				}
				if v, ok := vectors[t.name]; ok {
					u.vecs = append(u.vecs, vecRef{dst: v, typ: t.typ, bufOff: int(t.off), size: t.size})
				}
			}
			for i, m := range blk.Matrices() {
				if m.Data == nil {
					continue
				}
				t, ok := byName[m.Name]
				if !ok {
					return nil, fmt.Errorf("%w: %s not in layer %d", ErrLayout, m.Name, l)
				}
				pc.mats = append(pc.mats, matRef{field: i, bufOff: int(t.off), size: t.size})
			}
			u.pieces = []piece{pc}
			u.bytes = pc.bytes
			lay.readBytes += int64(u.entry.StoredSize)
		} else {
			// The vectors are read now and stay resident; the matrices are
			// read per stage, each at its own file offset.
			base := int64(0)
			if isQSF {
				base = int64(rec.Offset)
			}
			for _, t := range ts {
				if isQSF && int(t.off)+t.size > int(rec.Size) {
					return nil, fmt.Errorf("%w: %s lies outside its layer", ErrLayout, t.name)
				}
				v, ok := vectors[t.name]
				if !ok {
					continue
				}
				if len(scratch) < t.size {
					scratch = make([]byte, t.size)
				}
				if _, err := f.ReadAt(scratch[:t.size], base+t.off); err != nil {
					return nil, fmt.Errorf("stream: %s: %w", t.name, err)
				}
				tr, err := quant.Lookup(t.typ)
				if err != nil {
					return nil, fmt.Errorf("stream: %s: %w", t.name, err)
				}
				tr.Dequantize(v, scratch[:t.size])
			}
			for i, m := range blk.Matrices() {
				if m.Data == nil {
					continue
				}
				t, ok := byName[m.Name]
				if !ok {
					return nil, fmt.Errorf("%w: %s not in layer %d", ErrLayout, m.Name, l)
				}
				st := model.StageOf(i)
				if len(u.pieces) == 0 || u.pieces[len(u.pieces)-1].last != st {
					u.pieces = append(u.pieces, piece{first: st, last: st})
				}
				pc := &u.pieces[len(u.pieces)-1]
				c := convs[m.Name]
				size := t.size // in the ring
				pc.spans = append(pc.spans, span{off: base + t.off, bufOff: pc.bytes, size: t.size, mat: u.nmats, conv: c})
				lay.readBytes += int64(t.size)
				if c != nil {
					size = c.out
					pc.conv = true
					lay.maxConv = max(lay.maxConv, c.stageBytes(t.size))
					lay.i2sFile += int64(t.size)
					lay.i2sOut += int64(c.out)
					lay.readBytes += int64(c.scalesSize)
				}
				u.nmats++
				pc.mats = append(pc.mats, matRef{field: i, bufOff: pc.bytes, size: size})
				pc.bytes += alignUp(size)
			}
			if len(u.pieces) == 0 {
				return nil, fmt.Errorf("%w: layer %d has no matrices", ErrLayout, l)
			}
			if isQSF {
				var err error
				u.entry = rec
				if u.crcSegs, err = recordSegments(f, rec, u.pieces); err != nil {
					return nil, fmt.Errorf("stream: layer %d: %w", l, err)
				}
			}
			// A stage without matrices belongs to the piece before it (or,
			// for leading ones, the first piece).
			u.pieces[0].first = model.StageQKV
			for i := range u.pieces[:len(u.pieces)-1] {
				u.pieces[i].last = u.pieces[i+1].first - 1
			}
			u.pieces[len(u.pieces)-1].last = model.NumStages - 1
			for _, pc := range u.pieces {
				u.bytes += pc.bytes
			}
		}
		for i, pc := range u.pieces {
			for st := pc.first; st <= pc.last; st++ {
				u.stage[st] = int8(i)
			}
			lay.maxPiece = max(lay.maxPiece, pc.bytes)
		}
		lay.maxLayer = max(lay.maxLayer, u.bytes)
	}
	return lay, nil
}

// outlierTable reads the outlier side table ti (quant.SplitOutliers) of a
// matrix into memory of its own: the tables stay resident while their
// matrices stream (the plan counts them with the norms). A table in a
// compressed QSF layer is taken from the layer, read and decompressed once
// here.
func outlierTable(f *format.File, ti *format.TensorInfo, layers int) ([]byte, error) {
	l := layerOf(ti.Name)
	if rec, ok := f.LayerRecord(l); ok && rec.Compression != format.CompressNone && l < layers {
		p, err := f.QSF().ReadLayer(l, nil)
		if err != nil {
			return nil, fmt.Errorf("stream: %s: %w", ti.Name, err)
		}
		for _, t := range f.LayerTensors(layers)[l] {
			if t.Name == ti.Name {
				if t.At < 0 || t.At+int64(t.Size) > int64(len(p)) {
					return nil, fmt.Errorf("%w: %s lies outside its layer", ErrLayout, ti.Name)
				}
				return bytes.Clone(p[t.At : t.At+int64(t.Size)]), nil
			}
		}
		return nil, fmt.Errorf("%w: %s not in layer %d", ErrLayout, ti.Name, l)
	}
	d := make([]byte, ti.Size)
	if _, err := f.ReadAt(d, f.TensorOffset(ti)); err != nil {
		return nil, fmt.Errorf("stream: %s: %w", ti.Name, err)
	}
	return d, nil
}

// layerOf returns N for a tensor named blk.N.…, or −1.
func layerOf(name string) int {
	rest, ok := strings.CutPrefix(name, "blk.")
	if !ok {
		return -1
	}
	n, _, _ := strings.Cut(rest, ".")
	l, err := strconv.Atoi(n)
	if err != nil {
		return -1
	}
	return l
}

// LayerBytes returns the ring bytes of the largest layer (all its
// pieces): a ring of this size lets the reader load each matrix of the
// next layer while the rest of the current one computes.
func (lay *Layout) LayerBytes() int { return lay.maxLayer }

// MinRingBytes returns the smallest ring that works: its largest piece
// (the matrices of one stage of a layer, or a compressed QSF record) or
// one LM head row, whichever is larger.
func (lay *Layout) MinRingBytes() int { return max(lay.maxPiece, alignUp(lay.headRowBytes)) }

// LayerBytesTotal returns the bytes read for one pass over all layers.
func (lay *Layout) LayerBytesTotal() int64 { return lay.readBytes }

// DecompressBytes returns the size of the buffer compressed QSF layers are
// read into before decompression (0 when no layer is compressed).
func (lay *Layout) DecompressBytes() int { return lay.maxStored }

// HeadBytes returns the size of the LM head and of one of its rows.
func (lay *Layout) HeadBytes() (total int64, row int) {
	return int64(lay.headRowBytes) * int64(lay.Hparams.Vocab), lay.headRowBytes
}

// EmbeddingRowBytes returns the size of one token embedding row.
func (lay *Layout) EmbeddingRowBytes() int { return lay.embdRowBytes }

// HeadChunkRows returns how many LM head rows a chunk holds when streamed
// through a ring of ring bytes: about a quarter of the ring, so that the
// reader can fill the next chunks while one computes (at least one row; 0
// when a row does not fit the ring).
func (lay *Layout) HeadChunkRows(ring int) int {
	rb := alignUp(lay.headRowBytes)
	if rb > ring {
		return 0
	}
	return min(max(ring/4/lay.headRowBytes, 1), lay.Hparams.Vocab)
}

// recordSegments splits the uncompressed QSF layer record e into its
// matrices (the spans of pieces) and the bytes between them, which it
// reads and checksums, all in file order.
func recordSegments(f *format.File, e format.LayerEntry, pieces []piece) ([]crcSeg, error) {
	var mats []span
	for _, pc := range pieces {
		mats = append(mats, pc.spans...)
	}
	slices.SortFunc(mats, func(a, b span) int { return cmp.Compare(a.off, b.off) })
	var segs []crcSeg
	at, end := int64(e.Offset), int64(e.Offset)+int64(e.StoredSize)
	gap := func(to int64) error {
		if to < at {
			return fmt.Errorf("%w: matrices overlap in the layer record", ErrLayout)
		}
		if to == at {
			return nil
		}
		b := make([]byte, to-at)
		if _, err := f.ReadAt(b, at); err != nil {
			return err
		}
		segs = append(segs, crcSeg{size: to - at, mat: -1, crc: crc32.Checksum(b, castagnoli)})
		at = to
		return nil
	}
	for _, m := range mats {
		if err := gap(m.off); err != nil {
			return nil, err
		}
		segs = append(segs, crcSeg{size: int64(m.size), mat: m.mat})
		at = m.off + int64(m.size)
	}
	if err := gap(end); err != nil {
		return nil, err
	}
	return segs, nil
}
