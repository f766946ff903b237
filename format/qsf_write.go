package format

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"slices"

	"github.com/pierrec/lz4/v4"
	"github.com/qsf-llm/qsf/quant"
)

// QSFModel describes a QSF file to write: the typed header fields, the
// architecture config, the tokenizer and metadata key/values and the
// tensors of every section and layer (role, name for RoleNamed, shape and
// type; the writer computes the offsets and sizes).
type QSFModel struct {
	// Header holds the typed fields. The writer sets Version, HeaderSize,
	// Alignment, Layers (from len(Layers)), the tied flag (set when Final
	// has no RoleOutput tensor), the offsets, FileSize and CRC.
	Header    QSFHeader
	Arch      ArchConfig
	Tokenizer *Metadata // tokenizer.* keys; may be nil
	Metadata  *Metadata // every other key; may be nil
	Embedding []QSFTensor
	Layers    [][]QSFTensor
	Final     []QSFTensor
}

// QSFOutput is where WriteQSF writes: sequential writes, plus WriterAt to
// fill in the index, the section checksums and the header at the end. An
// *os.File is one.
type QSFOutput interface {
	io.Writer
	io.WriterAt
}

// QSFData supplies tensor data to WriteQSF: it must write exactly the
// bytes of tensor i of the given place (and layer, for PlaceLayer) to w.
type QSFData func(place QSFPlacement, layer, i int, w io.Writer) error

// QSFWriteOptions adjust WriteQSF.
type QSFWriteOptions struct {
	// Compression of the layers. A layer that LZ4 would not make smaller
	// is stored uncompressed.
	Compression Compression
	// LayerDone, if not nil, is called after each layer has been written.
	LayerDone func(layer int, e LayerEntry)
	// LayerImportance, when not nil, gives each layer's importance score
	// (LayerEntry.Importance; one per layer). Nil writes 0 for every layer.
	LayerImportance []float32
}

// qsfMaxLayer is the largest layer payload version 1 can describe.
const qsfMaxLayer = math.MaxUint32

// WriteQSF writes a QSF file to out, which must be empty and positioned at
// its start. Tensor data is requested in file order: the embedding section,
// the layers, then the final section. Only one layer (twice, when it is
// compressed) is held in memory; the embedding and final sections are
// streamed. It returns the header as written and the layer index.
func WriteQSF(out QSFOutput, m *QSFModel, data QSFData, opts QSFWriteOptions) (*QSFHeader, []LayerEntry, error) {
	p, err := planQSF(m)
	if err != nil {
		return nil, nil, err
	}
	if opts.Compression > qsfMaxCompression {
		return nil, nil, fmt.Errorf("qsf: write: unknown compression %d", opts.Compression)
	}
	if opts.LayerImportance != nil && len(opts.LayerImportance) != len(m.Layers) {
		return nil, nil, fmt.Errorf("qsf: write: %d layer importance scores for %d layers", len(opts.LayerImportance), len(m.Layers))
	}
	for i, v := range opts.LayerImportance {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, nil, fmt.Errorf("qsf: write: layer %d importance %v", i, v)
		}
	}
	w := &qsfWriter{out: out, bw: bufio.NewWriterSize(out, 256<<10), p: p, data: data, opts: opts}
	if err := w.write(); err != nil {
		return nil, nil, fmt.Errorf("qsf: write: %w", err)
	}
	return &p.hdr, p.entries, nil
}

// qsfPlan is the validated layout of a file to write.
type qsfPlan struct {
	hdr        QSFHeader
	arch       []byte // ARCH payload
	tok, meta  []byte // TOKN and META payloads
	embedding  []QSFTensor
	layers     [][]QSFTensor
	final      []QSFTensor
	embSize    uint64
	finSize    uint64
	layerSizes []uint64
	dirSize    uint64
	entries    []LayerEntry
}

func planQSF(m *QSFModel) (*qsfPlan, error) {
	p := &qsfPlan{hdr: m.Header}
	h := &p.hdr
	h.Version, h.HeaderSize, h.Alignment = QSFVersion, QSFHeaderSize, QSFAlignment
	if uint64(len(m.Layers)) > math.MaxUint32 {
		return nil, errors.New("qsf: write: too many layers")
	}
	h.Layers = uint32(len(m.Layers))
	switch {
	case h.Arch > qsfMaxArch:
		return nil, fmt.Errorf("qsf: write: unknown architecture code %d", h.Arch)
	case h.Activation > qsfMaxActivation || h.Norm > NormLayer || h.Position > qsfMaxPosition:
		return nil, errors.New("qsf: write: unknown activation, norm or position code")
	case m.Arch.RopeStyle > RopeNeoX || m.Arch.Features&^qsfKnownFeatures != 0:
		return nil, errors.New("qsf: write: unknown RoPE style or feature bits")
	}
	names := map[string]bool{}
	var err error
	if p.embedding, p.embSize, err = planTensors(m.Embedding, PlaceEmbedding, 0, names); err != nil {
		return nil, err
	}
	p.layers = make([][]QSFTensor, len(m.Layers))
	p.layerSizes = make([]uint64, len(m.Layers))
	for i, ts := range m.Layers {
		if len(ts) > math.MaxUint8 {
			return nil, fmt.Errorf("qsf: write: layer %d has %d tensors, at most 255 allowed", i, len(ts))
		}
		if p.layers[i], p.layerSizes[i], err = planTensors(ts, PlaceLayer, i, names); err != nil {
			return nil, err
		}
		if p.layerSizes[i] > qsfMaxLayer {
			return nil, fmt.Errorf("qsf: write: layer %d is %d bytes, version 1 allows %d", i, p.layerSizes[i], uint64(qsfMaxLayer))
		}
		for _, t := range p.layers[i] {
			p.dirSize += uint64(len(t.record()))
		}
	}
	if p.final, p.finSize, err = planTensors(m.Final, PlaceFinal, 0, names); err != nil {
		return nil, err
	}
	h.Flags &^= FlagTiedEmbeddings
	if !slices.ContainsFunc(p.final, func(t QSFTensor) bool { return t.Role == RoleOutput }) {
		h.Flags |= FlagTiedEmbeddings
	}
	if h.Flags&^qsfKnownHdrFlags != 0 {
		return nil, fmt.Errorf("qsf: write: unknown header flags %#x", h.Flags)
	}
	p.arch = m.Arch.marshal()
	if p.tok, err = encodeKVs(m.Tokenizer); err != nil {
		return nil, fmt.Errorf("qsf: write: tokenizer: %w", err)
	}
	if p.meta, err = encodeKVs(m.Metadata); err != nil {
		return nil, fmt.Errorf("qsf: write: metadata: %w", err)
	}
	if m.Tokenizer != nil && m.Metadata != nil {
		for _, kv := range m.Tokenizer.kvs {
			if _, dup := m.Metadata.Get(kv.Key); dup {
				return nil, fmt.Errorf("qsf: write: key %q is in both the tokenizer and the metadata", kv.Key)
			}
		}
	}
	return p, nil
}

// planTensors checks the tensors of one section or layer and computes
// their data offsets and sizes, returning a copy and the payload size.
func planTensors(in []QSFTensor, place QSFPlacement, layer int, names map[string]bool) ([]QSFTensor, uint64, error) {
	ts := slices.Clone(in)
	var pos uint64
	for i := range ts {
		t := &ts[i]
		where := fmt.Sprintf("%s tensor %d", placeName(place, layer), i)
		ok := t.Role == RoleNamed
		switch place {
		case PlaceEmbedding:
			ok = ok || t.Role.isEmbedding()
		case PlaceLayer:
			ok = ok || t.Role.isLayer()
		case PlaceFinal:
			ok = ok || t.Role.isFinal()
		}
		if !ok {
			return nil, 0, fmt.Errorf("qsf: write: %s: role %v does not belong there", where, t.Role)
		}
		if t.Role == RoleNamed {
			if t.Name == "" || len(t.Name) > qsfMaxNameLen {
				return nil, 0, fmt.Errorf("qsf: write: %s: named tensor needs a name of 1 to %d bytes", where, qsfMaxNameLen)
			}
		} else {
			t.Name = TensorName(t.Role, layer)
		}
		if names[t.Name] {
			return nil, 0, fmt.Errorf("qsf: write: duplicate tensor %q", t.Name)
		}
		names[t.Name] = true
		if len(t.Shape) != 1 && len(t.Shape) != 2 {
			return nil, 0, fmt.Errorf("qsf: write: tensor %q has %d dimensions, want 1 or 2", t.Name, len(t.Shape))
		}
		t.Shape = slices.Clone(t.Shape)
		size, err := tensorSize(t.Shape, t.Type)
		if err != nil {
			return nil, 0, fmt.Errorf("qsf: write: tensor %q: %w", t.Name, err)
		}
		if t.Type == quant.I2_S && t.Size > size { // its layout's size (quant.I2SSize), given by the caller
			if t.Size-size > math.MaxUint32 {
				return nil, 0, fmt.Errorf("qsf: write: tensor %q: I2_S size %d too large", t.Name, t.Size)
			}
			size = t.Size
		}
		if uint32(t.Type) >= 1<<16 {
			return nil, 0, fmt.Errorf("qsf: write: tensor %q: type code %d too large", t.Name, t.Type)
		}
		nameLen := 0
		if t.Role == RoleNamed {
			nameLen = len(t.Name)
		}
		t.DataOffset = alignQSF(pos + qsfRecordSize + uint64(nameLen))
		t.Size = size
		pos = alignQSF(t.DataOffset + size)
		if pos > math.MaxInt64/2 {
			return nil, 0, fmt.Errorf("qsf: write: %s is too large", placeName(place, layer))
		}
	}
	return ts, pos, nil
}

func placeName(place QSFPlacement, layer int) string {
	switch place {
	case PlaceLayer:
		return fmt.Sprintf("layer %d", layer)
	case PlaceFinal:
		return "final"
	}
	return "embedding"
}

// encodeKVs encodes key/value pairs in GGUF's encoding: a u64 count, then
// the pairs.
func encodeKVs(md *Metadata) ([]byte, error) {
	if md == nil {
		md = &Metadata{}
	}
	for _, kv := range md.kvs {
		if err := checkValue(kv.Value, 0); err != nil {
			return nil, fmt.Errorf("key %q: %w", kv.Key, err)
		}
	}
	var buf bytes.Buffer
	e := &encoder{w: &buf}
	e.u64(uint64(md.Len()))
	for _, kv := range md.kvs {
		e.str(kv.Key)
		e.u32(uint32(kv.Value.typ))
		e.value(kv.Value)
	}
	return buf.Bytes(), e.err
}

// qsfWriter writes one file.
type qsfWriter struct {
	out  QSFOutput
	bw   *bufio.Writer
	n    uint64 // bytes written through bw
	p    *qsfPlan
	data QSFData
	opts QSFWriteOptions
	err  error
}

func (w *qsfWriter) Write(b []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	n, err := w.bw.Write(b)
	w.n += uint64(n)
	w.err = err
	return n, err
}

func (w *qsfWriter) pad() {
	w.Write(zeros[:alignQSF(w.n)-w.n])
}

// frame returns a section frame.
func frame(tag string, crc uint32, length uint64) []byte {
	b := make([]byte, qsfFrameSize)
	copy(b, tag)
	le.PutUint32(b[4:], crc)
	le.PutUint64(b[8:], length)
	return b
}

// section writes a section whose payload is in memory and returns its
// offset.
func (w *qsfWriter) section(tag string, payload []byte) uint64 {
	off := w.n
	w.Write(frame(tag, qsfCRC(payload), uint64(len(payload))))
	w.Write(payload)
	w.pad()
	return off
}

func (w *qsfWriter) write() error {
	p, h := w.p, &w.p.hdr
	w.Write(make([]byte, QSFHeaderSize))
	w.section(tagArch, p.arch)
	h.TokenizerOffset = w.section(tagTokenizer, p.tok)
	h.MetadataOffset = w.section(tagMetadata, p.meta)

	// The index is written at the end, once the layers are known.
	h.IndexOffset = w.n
	indexLen := uint64(len(p.layers))*qsfEntrySize + p.dirSize
	w.Write(make([]byte, qsfFrameSize))
	for left := indexLen; left > 0 && w.err == nil; {
		k := min(left, uint64(len(zeros)))
		w.Write(zeros[:k])
		left -= k
	}
	w.pad()

	h.EmbeddingOffset = w.n
	embCRC, err := w.streamSection(p.embedding, p.embSize, PlaceEmbedding)
	if err != nil {
		return err
	}
	p.entries = make([]LayerEntry, len(p.layers))
	var lw layerWriter
	for i := range p.layers {
		if err := w.layer(&lw, i); err != nil {
			return err
		}
	}
	h.FinalOffset = w.n
	finCRC, err := w.streamSection(p.final, p.finSize, PlaceFinal)
	if err != nil {
		return err
	}
	h.FileSize = w.n
	h.DefaultQuant = defaultQuant(p.layers)
	if w.err != nil {
		return w.err
	}
	if err := w.bw.Flush(); err != nil {
		return err
	}

	// Patch the index, the streamed sections' checksums and the header.
	index := make([]byte, 0, indexLen)
	for i := range p.entries {
		var b [qsfEntrySize]byte
		p.entries[i].put(b[:])
		index = append(index, b[:]...)
	}
	for _, ts := range p.layers {
		for _, t := range ts {
			index = append(index, t.record()...)
		}
	}
	patches := []struct {
		off uint64
		b   []byte
	}{
		{h.IndexOffset, frame(tagIndex, qsfCRC(index), indexLen)},
		{h.IndexOffset + qsfFrameSize, index},
		{h.EmbeddingOffset, frame(tagEmbedding, embCRC, p.embSize)},
		{h.FinalOffset, frame(tagFinal, finCRC, p.finSize)},
		{0, h.marshal()},
	}
	for _, pt := range patches {
		if _, err := w.out.WriteAt(pt.b, int64(pt.off)); err != nil {
			return err
		}
	}
	return nil
}

// defaultQuant returns the type holding most bytes of the layers.
func defaultQuant(layers [][]QSFTensor) quant.Type {
	bytes := map[quant.Type]uint64{}
	for _, ts := range layers {
		for _, t := range ts {
			bytes[t.Type] += t.Size
		}
	}
	return dominant(bytes)
}

func dominant(bytes map[quant.Type]uint64) quant.Type {
	var best quant.Type
	var most uint64
	for t, n := range bytes {
		if n > most || (n == most && t < best) {
			best, most = t, n
		}
	}
	return best
}

// streamSection writes the EMBD or FINL section, asking for the data of
// each tensor, and returns the payload CRC (the frame is patched later).
func (w *qsfWriter) streamSection(ts []QSFTensor, size uint64, place QSFPlacement) (uint32, error) {
	w.Write(make([]byte, qsfFrameSize))
	crc := crc32.New(castagnoli)
	tw := &teeWriter{w: w, h: crc}
	if err := writeTensors(tw, ts, place, 0, w.data); err != nil {
		return 0, err
	}
	if tw.n != size {
		return 0, fmt.Errorf("%s section is %d bytes, planned %d", placeName(place, 0), tw.n, size)
	}
	return crc.Sum32(), w.err
}

// teeWriter writes to w and to a hash, counting bytes.
type teeWriter struct {
	w io.Writer
	h hash.Hash32
	n uint64
}

func (t *teeWriter) Write(b []byte) (int, error) {
	n, err := t.w.Write(b)
	t.h.Write(b[:n])
	t.n += uint64(n)
	return n, err
}

// countWriter counts and forwards bytes.
type countWriter struct {
	w io.Writer
	n uint64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += uint64(n)
	return n, err
}

// writeTensors writes the records and data of ts to w, whose position is
// the payload start.
func writeTensors(w io.Writer, ts []QSFTensor, place QSFPlacement, layer int, data QSFData) error {
	cw := &countWriter{w: w}
	for i := range ts {
		t := &ts[i]
		cw.Write(t.record())
		cw.Write(zeros[:t.DataOffset-cw.n])
		start := cw.n
		if err := data(place, layer, i, cw); err != nil {
			return fmt.Errorf("data of tensor %q: %w", t.Name, err)
		}
		if got := cw.n - start; got != t.Size {
			return fmt.Errorf("data of tensor %q is %d bytes, want %d", t.Name, got, t.Size)
		}
		if _, err := cw.Write(zeros[:alignQSF(cw.n)-cw.n]); err != nil {
			return err
		}
	}
	return nil
}

// sliceWriter appends to a byte slice.
type sliceWriter struct{ b []byte }

func (s *sliceWriter) Write(p []byte) (int, error) {
	s.b = append(s.b, p...)
	return len(p), nil
}

// layerWriter holds the buffers reused from layer to layer.
type layerWriter struct {
	buf  sliceWriter
	comp []byte
	fast lz4.Compressor
	hc   lz4.CompressorHC
}

func (w *qsfWriter) layer(lw *layerWriter, i int) error {
	p := w.p
	ts := p.layers[i]
	if size := int(p.layerSizes[i]); cap(lw.buf.b) < size {
		lw.buf.b = make([]byte, 0, size) // exactly one layer
	}
	lw.buf.b = lw.buf.b[:0]
	if err := writeTensors(&lw.buf, ts, PlaceLayer, i, w.data); err != nil {
		return fmt.Errorf("layer %d: %w", i, err)
	}
	payload := lw.buf.b
	if uint64(len(payload)) != p.layerSizes[i] {
		return fmt.Errorf("layer %d is %d bytes, planned %d", i, len(payload), p.layerSizes[i])
	}
	stored, comp := payload, CompressNone
	if w.opts.Compression != CompressNone && len(payload) > 0 {
		if n := lz4.CompressBlockBound(len(payload)); cap(lw.comp) < n {
			lw.comp = make([]byte, n)
		}
		dst := lw.comp[:cap(lw.comp)]
		var n int
		var err error
		if w.opts.Compression == CompressLZ4HC {
			lw.hc.Level = lz4.Level9
			n, err = lw.hc.CompressBlock(payload, dst)
		} else {
			n, err = lw.fast.CompressBlock(payload, dst)
		}
		if err != nil {
			return fmt.Errorf("layer %d: lz4: %w", i, err)
		}
		if n > 0 && n < len(payload) {
			stored, comp = dst[:n], w.opts.Compression
		}
	}
	bytesByType := map[quant.Type]uint64{}
	for _, t := range ts {
		bytesByType[t.Type] += t.Size
	}
	e := LayerEntry{
		Offset: w.n, StoredSize: uint32(len(stored)), Size: uint32(len(payload)),
		Quant: dominant(bytesByType), Compression: comp, Tensors: uint8(len(ts)), CRC: qsfCRC(stored),
	}
	if w.opts.LayerImportance != nil {
		e.Importance = w.opts.LayerImportance[i]
	}
	w.Write(stored)
	w.pad()
	if w.err != nil {
		return w.err
	}
	p.entries[i] = e
	if w.opts.LayerDone != nil {
		w.opts.LayerDone(i, e)
	}
	return nil
}

// CompressedSize returns the number of bytes b takes compressed with c as
// WriteQSF compresses a layer (an LZ4 block; LZ4-HC at level 9), or
// len(b) when c is CompressNone or compression would not make b smaller
// (WriteQSF then stores the layer as it is).
func CompressedSize(b []byte, c Compression) (int64, error) {
	if c == CompressNone || len(b) == 0 {
		return int64(len(b)), nil
	}
	if c > qsfMaxCompression {
		return 0, fmt.Errorf("qsf: unknown compression %d", c)
	}
	dst := make([]byte, lz4.CompressBlockBound(len(b)))
	var n int
	var err error
	if c == CompressLZ4HC {
		hc := lz4.CompressorHC{Level: lz4.Level9}
		n, err = hc.CompressBlock(b, dst)
	} else {
		var fast lz4.Compressor
		n, err = fast.CompressBlock(b, dst)
	}
	if err != nil {
		return 0, fmt.Errorf("qsf: lz4: %w", err)
	}
	if n == 0 || n >= len(b) {
		return int64(len(b)), nil
	}
	return int64(n), nil
}
