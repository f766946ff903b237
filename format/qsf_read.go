package format

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sync"

	"github.com/pierrec/lz4/v4"
	"github.com/qsf-llm/qsf/quant"
)

// QSF is an opened QSF file: its header, architecture config, tokenizer and
// metadata key/values, layer index and the tensors of every section and
// layer. Layers are read on demand: ReadLayer reads one with a single
// ReadAt (pread), checks its CRC and decompresses it.
//
// The methods may be called concurrently.
type QSF struct {
	Header    QSFHeader
	Arch      ArchConfig
	Tokenizer Metadata // the TOKN section
	Metadata  Metadata // the META section
	Layers    []LayerEntry
	// Embedding, LayerTensors[i] and Final are the tensors of the
	// embedding section, layer i and the final section, with their GGUF
	// names and their data offsets within the payload.
	Embedding    []QSFTensor
	LayerTensors [][]QSFTensor
	Final        []QSFTensor

	r        io.ReaderAt
	data     []byte // the whole file when memory-mapped
	size     uint64
	owner    *File // for the closed check, nil when read with ReadQSF
	deferCRC bool

	embPayload, finPayload uint64   // absolute payload offsets
	dir                    [][]byte // the directory records of each layer
	sections               []QSFSection
	cache                  []layerCache
}

// lz4MaxRatio bounds what an LZ4 block can expand to, so that a small
// corrupt file cannot make the reader allocate a huge buffer.
const lz4MaxRatio = 256

type layerCache struct {
	once sync.Once
	data []byte
	err  error
}

// QSFSection describes one checksummed part of a QSF file.
type QSFSection struct {
	Name   string // "header", "arch", "tokenizer", "metadata", "index", "embedding", "final"
	Offset uint64 // of the frame (or the header)
	Length uint64 // of the payload (128 for the header)
	CRC    uint32
}

// ReadQSF parses and checks a QSF file of the given size: header, section
// frames and CRCs, layout and layer index. Layers are not read; their CRCs
// are checked by ReadLayer. Nothing is allocated beyond what the file's
// size justifies.
func ReadQSF(r io.ReaderAt, size int64) (*QSF, error) {
	if size < 0 {
		return nil, fmt.Errorf("qsf: negative size %d", size)
	}
	return readQSF(r, uint64(size), nil, false)
}

// isQSF reports whether the file starts with the QSF magic.
func isQSF(r io.ReaderAt) bool {
	var m [4]byte
	n, _ := r.ReadAt(m[:], 0)
	return n == 4 && string(m[:]) == QSFMagic
}

func readQSF(r io.ReaderAt, size uint64, data []byte, deferCRC bool) (*QSF, error) {
	q := &QSF{r: r, data: data, size: size, deferCRC: deferCRC}
	if err := q.open(); err != nil {
		return nil, err
	}
	q.cache = make([]layerCache, len(q.Layers))
	return q, nil
}

// fetch returns n bytes at off, which the caller has checked lie in the
// file. With a mapping the slice aliases it.
func (q *QSF) fetch(off, n uint64, section string, layer int) ([]byte, error) {
	if off > q.size || n > q.size-off {
		return nil, qsfErr(ErrTruncated, section, layer, off, "%d bytes at %d run past the end of the %d-byte file", n, off, q.size)
	}
	if q.data != nil {
		return q.data[off : off+n : off+n], nil
	}
	if n == 0 {
		return nil, nil
	}
	b := make([]byte, n)
	if _, err := q.r.ReadAt(b, int64(off)); err != nil {
		if err == io.EOF {
			return nil, qsfErr(ErrTruncated, section, layer, off, "unexpected end of file")
		}
		return nil, fmt.Errorf("qsf: %s: reading at %d: %w", section, off, err)
	}
	return b, nil
}

// crcRange computes the CRC of n bytes at off without holding them all.
func (q *QSF) crcRange(off, n uint64) (uint32, error) {
	if q.data != nil {
		return qsfCRC(q.data[off : off+n]), nil
	}
	h := crc32.New(castagnoli)
	if _, err := io.Copy(h, io.NewSectionReader(q.r, int64(off), int64(n))); err != nil {
		return 0, err
	}
	return h.Sum32(), nil
}

// allZero reports whether n bytes at off are zero.
func (q *QSF) allZero(off, n uint64, section string, layer int) error {
	b, err := q.fetch(off, n, section, layer)
	if err != nil {
		return err
	}
	for _, c := range b {
		if c != 0 {
			return qsfErr(ErrCorrupt, section, layer, off, "non-zero padding")
		}
	}
	return nil
}

func (q *QSF) open() error {
	if q.size < 4 {
		return qsfErr(ErrBadMagic, "header", -1, 0, "file of %d bytes is too short to be QSF", q.size)
	}
	b, err := q.fetch(0, min(q.size, QSFHeaderSize), "header", -1)
	if err != nil {
		return err
	}
	if string(b[:4]) != QSFMagic {
		return qsfErr(ErrBadMagic, "header", -1, 0, "magic %q, want %q", b[:4], QSFMagic)
	}
	if len(b) < QSFHeaderSize {
		return qsfErr(ErrTruncated, "header", -1, 0, "file of %d bytes is shorter than the %d-byte header", q.size, QSFHeaderSize)
	}
	h := unmarshalHeader(b)
	if crc := qsfCRC(b[:qsfHeaderCRCAt]); crc != h.CRC {
		return qsfErr(ErrChecksum, "header", -1, qsfHeaderCRCAt, "CRC %#08x, computed %#08x", h.CRC, crc)
	}
	switch {
	case h.Version != QSFVersion:
		return qsfErr(ErrVersion, "header", -1, 4, "version %d, want %d", h.Version, QSFVersion)
	case h.HeaderSize != QSFHeaderSize:
		return qsfErr(ErrVersion, "header", -1, 6, "header size %d, want %d", h.HeaderSize, QSFHeaderSize)
	case h.FileSize > q.size:
		return qsfErr(ErrTruncated, "header", -1, 112, "header says %d bytes, the file has %d", h.FileSize, q.size)
	case h.FileSize < q.size:
		return qsfErr(ErrCorrupt, "header", -1, 112, "header says %d bytes, the file has %d", h.FileSize, q.size)
	case h.Alignment != QSFAlignment:
		return qsfErr(ErrCorrupt, "header", -1, 68, "alignment %d, want %d", h.Alignment, QSFAlignment)
	case h.Arch > qsfMaxArch || h.Activation > qsfMaxActivation || h.Norm > NormLayer || h.Position > qsfMaxPosition:
		return qsfErr(ErrCorrupt, "header", -1, 8, "unknown architecture, activation, norm or position code")
	case h.Flags&^qsfKnownHdrFlags != 0 || le.Uint16(b[14:]) != 0 || le.Uint32(b[124:]) != 0:
		return qsfErr(ErrCorrupt, "header", -1, 13, "reserved flags or fields are not zero")
	case uint64(h.Layers)*qsfEntrySize > q.size:
		return qsfErr(ErrCorrupt, "header", -1, 16, "%d layers cannot fit in %d bytes", h.Layers, q.size)
	}
	q.Header = h
	q.sections = append(q.sections, QSFSection{Name: "header", Offset: 0, Length: QSFHeaderSize, CRC: h.CRC})

	// The sections, in file order, each starting where the previous ended.
	next, err := q.arch(QSFHeaderSize)
	if err != nil {
		return err
	}
	steps := []struct {
		want uint64
		name string
		read func(uint64) (uint64, error)
	}{
		{h.TokenizerOffset, "tokenizer", func(off uint64) (uint64, error) { return q.kvs(off, tagTokenizer, "tokenizer", &q.Tokenizer) }},
		{h.MetadataOffset, "metadata", func(off uint64) (uint64, error) { return q.kvs(off, tagMetadata, "metadata", &q.Metadata) }},
		{h.IndexOffset, "index", q.index},
		{h.EmbeddingOffset, "embedding", func(off uint64) (uint64, error) {
			return q.tensorSection(off, tagEmbedding, "embedding", &q.Embedding, &q.embPayload)
		}},
		{0, "layer", q.layers},
		{h.FinalOffset, "final", func(off uint64) (uint64, error) {
			return q.tensorSection(off, tagFinal, "final", &q.Final, &q.finPayload)
		}},
	}
	for _, s := range steps {
		if s.name != "layer" && s.want != next {
			return qsfErr(ErrCorrupt, s.name, -1, s.want, "section at %d, expected at %d after the previous one", s.want, next)
		}
		if next, err = s.read(next); err != nil {
			return err
		}
	}
	if next != q.size {
		return qsfErr(ErrCorrupt, "final", -1, next, "the final section ends at %d, the file at %d", next, q.size)
	}
	hasOutput := false
	for _, t := range q.Final {
		hasOutput = hasOutput || t.Role == RoleOutput
	}
	if hasOutput == h.Tied() {
		return qsfErr(ErrCorrupt, "header", -1, 13, "tied-embeddings flag %v disagrees with the final section", h.Tied())
	}
	return nil
}

// frame reads the section frame at off and checks the payload CRC. It
// returns the payload offset and length and the offset of the next part.
func (q *QSF) frame(off uint64, tag, section string) (payload, length, next uint64, err error) {
	b, err := q.fetch(off, qsfFrameSize, section, -1)
	if err != nil {
		return 0, 0, 0, err
	}
	if string(b[:4]) != tag {
		return 0, 0, 0, qsfErr(ErrCorrupt, section, -1, off, "tag %q, want %q", b[:4], tag)
	}
	for _, c := range b[16:] {
		if c != 0 {
			return 0, 0, 0, qsfErr(ErrCorrupt, section, -1, off+16, "reserved frame bytes are not zero")
		}
	}
	crc, length := le.Uint32(b[4:]), le.Uint64(b[8:])
	payload = off + qsfFrameSize
	if length > q.size-payload {
		return 0, 0, 0, qsfErr(ErrCorrupt, section, -1, off+8, "payload of %d bytes runs past the end of the file", length)
	}
	end := payload + length
	next = alignQSF(end)
	if next > q.size {
		return 0, 0, 0, qsfErr(ErrCorrupt, section, -1, end, "padding runs past the end of the file")
	}
	if err := q.allZero(end, next-end, section, -1); err != nil {
		return 0, 0, 0, err
	}
	got, err := q.crcRange(payload, length)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("qsf: %s: %w", section, err)
	}
	if got != crc {
		return 0, 0, 0, qsfErr(ErrChecksum, section, -1, off+4, "CRC %#08x, computed %#08x", crc, got)
	}
	q.sections = append(q.sections, QSFSection{Name: section, Offset: off, Length: length, CRC: crc})
	return payload, length, next, nil
}

func (q *QSF) arch(off uint64) (uint64, error) {
	payload, length, next, err := q.frame(off, tagArch, "arch")
	if err != nil {
		return 0, err
	}
	if length != qsfArchSize {
		return 0, qsfErr(ErrCorrupt, "arch", -1, off+8, "payload of %d bytes, want %d", length, qsfArchSize)
	}
	b, err := q.fetch(payload, length, "arch", -1)
	if err != nil {
		return 0, err
	}
	a := unmarshalArch(b)
	if b[5] != 0 || !bytes.Equal(b[44:], make([]byte, 20)) || a.RopeStyle > RopeNeoX || a.Features&^qsfKnownFeatures != 0 || a.RopeScaling > 2 {
		return 0, qsfErr(ErrCorrupt, "arch", -1, payload, "unknown codes or non-zero reserved bytes")
	}
	q.Arch = a
	return next, nil
}

// kvs reads a TOKN or META section into md.
func (q *QSF) kvs(off uint64, tag, section string, md *Metadata) (uint64, error) {
	payload, length, next, err := q.frame(off, tag, section)
	if err != nil {
		return 0, err
	}
	b, err := q.fetch(payload, length, section, -1)
	if err != nil {
		return 0, err
	}
	d := &decoder{r: bufio.NewReaderSize(bytes.NewReader(b), int(min(length+16, 64<<10))), size: int64(length)}
	var g GGUF
	n, err := d.count("key-value pairs", 13)
	if err == nil {
		err = d.metadata(&g, n)
	}
	if err == nil && d.pos != int64(length) {
		err = fmt.Errorf("%d bytes after the last pair", int64(length)-d.pos)
	}
	if err != nil {
		return 0, qsfErr(ErrCorrupt, section, -1, payload, "%v", err)
	}
	*md = g.Metadata
	return next, nil
}

// decodeRecord decodes the tensor record at the start of b (at least
// qsfRecordSize bytes) and returns it with its name length.
func decodeRecord(b []byte) (QSFTensor, uint64, error) {
	t := QSFTensor{Role: Role(le.Uint16(b))}
	nd := b[2]
	cols, rows := le.Uint64(b[8:]), le.Uint64(b[16:])
	t.Type = quant.Type(le.Uint32(b[4:]))
	t.DataOffset = le.Uint64(b[24:])
	nameLen := uint64(le.Uint32(b[32:]))
	switch {
	case !t.Role.known():
		return t, 0, fmt.Errorf("unknown tensor role %d", t.Role)
	case nd != 1 && nd != 2, nd == 1 && rows != 1:
		return t, 0, fmt.Errorf("bad dimensions: %d, %d rows", nd, rows)
	case b[3] != 0 || (le.Uint32(b[36:]) != 0 && t.Type != quant.I2_S):
		return t, 0, errors.New("reserved record bytes are not zero")
	case (t.Role == RoleNamed) != (nameLen > 0) || nameLen > qsfMaxNameLen:
		return t, 0, fmt.Errorf("name length %d for role %v", nameLen, t.Role)
	}
	t.Shape = []uint64{cols}
	if nd == 2 {
		t.Shape = append(t.Shape, rows)
	}
	size, err := tensorSize(t.Shape, t.Type)
	if err != nil {
		return t, 0, err
	}
	if t.Type == quant.I2_S {
		size += uint64(le.Uint32(b[36:])) // the layout's bytes beyond the codes
	}
	t.Size = size
	return t, nameLen, nil
}

// recordKind maps a decodeRecord error to a sentinel.
func recordKind(err error) error {
	var e *shapeError
	if errors.As(err, &e) && e.unknown {
		return ErrUnknownType
	}
	return ErrCorrupt
}

// placeOK reports whether role r may appear in the given place.
func placeOK(r Role, place QSFPlacement) bool {
	switch {
	case r == RoleNamed:
		return true
	case place == PlaceLayer:
		return r.isLayer()
	case place == PlaceFinal:
		return r.isFinal()
	}
	return r.isEmbedding()
}

// walkTensors parses a payload of tensor records and data of the given
// length, reading through fetch (offsets relative to the payload). count
// is the number of tensors expected, or -1 to read until the end.
func walkTensors(fetch func(off, n uint64) ([]byte, error), length uint64, count int, place QSFPlacement, layer int) ([]QSFTensor, error) {
	var ts []QSFTensor
	var pos uint64
	for count < 0 && pos < length || len(ts) < count {
		if qsfRecordSize > length-pos {
			return nil, fmt.Errorf("tensor record %d at %d runs past the end of the %d-byte payload", len(ts), pos, length)
		}
		b, err := fetch(pos, qsfRecordSize)
		if err != nil {
			return nil, err
		}
		t, nameLen, err := decodeRecord(b)
		if err != nil {
			return nil, fmt.Errorf("tensor record %d at %d: %w", len(ts), pos, err)
		}
		if !placeOK(t.Role, place) {
			return nil, fmt.Errorf("tensor record %d: role %v does not belong in %s", len(ts), t.Role, placeName(place, layer))
		}
		if nameLen > length-pos-qsfRecordSize {
			return nil, fmt.Errorf("tensor record %d: name runs past the payload", len(ts))
		}
		if t.Role == RoleNamed {
			nb, err := fetch(pos+qsfRecordSize, nameLen)
			if err != nil {
				return nil, err
			}
			t.Name = string(nb)
		} else {
			t.Name = TensorName(t.Role, layer)
		}
		if want := alignQSF(pos + qsfRecordSize + nameLen); t.DataOffset != want {
			return nil, fmt.Errorf("tensor %q: data offset %d, want %d", t.Name, t.DataOffset, want)
		}
		if t.DataOffset > length || t.Size > length-t.DataOffset {
			return nil, fmt.Errorf("tensor %q: data [%d, +%d) runs past the %d-byte payload", t.Name, t.DataOffset, t.Size, length)
		}
		pos = alignQSF(t.DataOffset + t.Size)
		ts = append(ts, t)
	}
	if pos != length {
		return nil, fmt.Errorf("tensors end at %d, the payload at %d", pos, length)
	}
	return ts, nil
}

// tensorSection reads an EMBD or FINL section.
func (q *QSF) tensorSection(off uint64, tag, section string, ts *[]QSFTensor, payloadOff *uint64) (uint64, error) {
	payload, length, next, err := q.frame(off, tag, section)
	if err != nil {
		return 0, err
	}
	place := PlaceEmbedding
	if tag == tagFinal {
		place = PlaceFinal
	}
	fetch := func(o, n uint64) ([]byte, error) { return q.fetch(payload+o, n, section, -1) }
	if *ts, err = walkTensors(fetch, length, -1, place, 0); err != nil {
		return 0, asQSFErr(err, section, -1, payload)
	}
	*payloadOff = payload
	return next, nil
}

// asQSFErr turns a walkTensors error into a QSFError.
func asQSFErr(err error, section string, layer int, off uint64) error {
	var qe *QSFError
	if errors.As(err, &qe) {
		return err
	}
	return qsfErr(recordKind(err), section, layer, off, "%v", err)
}

// index reads the layer index and the tensor directory.
func (q *QSF) index(off uint64) (uint64, error) {
	payload, length, next, err := q.frame(off, tagIndex, "index")
	if err != nil {
		return 0, err
	}
	n := uint64(q.Header.Layers)
	if n*qsfEntrySize > length {
		return 0, qsfErr(ErrCorrupt, "index", -1, off+8, "%d bytes cannot hold %d entries", length, n)
	}
	b, err := q.fetch(payload, length, "index", -1)
	if err != nil {
		return 0, err
	}
	q.Layers = make([]LayerEntry, n)
	q.LayerTensors = make([][]QSFTensor, n)
	q.dir = make([][]byte, n)
	pos := n * qsfEntrySize
	for i := range q.Layers {
		eb := b[i*qsfEntrySize:]
		e := getEntry(eb)
		if e.Compression > qsfMaxCompression || le.Uint32(eb[28:]) != 0 || (e.Compression == CompressNone && e.StoredSize != e.Size) {
			return 0, qsfErr(ErrCorrupt, "index", i, payload+uint64(i)*qsfEntrySize, "layer %d: bad compression, sizes or reserved bytes", i)
		}
		if e.Compression != CompressNone && uint64(e.Size) > uint64(e.StoredSize)*lz4MaxRatio+64 {
			return 0, qsfErr(ErrCorrupt, "index", i, payload+uint64(i)*qsfEntrySize, "layer %d: %d bytes cannot decompress to %d", i, e.StoredSize, e.Size)
		}
		q.Layers[i] = e
		start := pos
		for k := range int(e.Tensors) {
			if qsfRecordSize > length-pos {
				return 0, qsfErr(ErrCorrupt, "index", -1, payload+pos, "layer %d tensor %d: directory runs past the section", i, k)
			}
			t, nameLen, err := decodeRecord(b[pos:])
			if err == nil && nameLen > length-pos-qsfRecordSize {
				err = errors.New("name runs past the section")
			}
			if err == nil && !placeOK(t.Role, PlaceLayer) {
				err = fmt.Errorf("role %v is not a layer role", t.Role)
			}
			if err != nil {
				return 0, qsfErr(recordKind(err), "index", -1, payload+pos, "layer %d tensor %d: %v", i, k, err)
			}
			if t.Role == RoleNamed {
				t.Name = string(b[pos+qsfRecordSize : pos+qsfRecordSize+nameLen])
			} else {
				t.Name = TensorName(t.Role, i)
			}
			q.LayerTensors[i] = append(q.LayerTensors[i], t)
			pos += qsfRecordSize + nameLen
		}
		q.dir[i] = b[start:pos:pos]
		// The directory must describe a payload of exactly e.Size bytes.
		var end uint64
		for _, t := range q.LayerTensors[i] {
			nameLen := uint64(0)
			if t.Role == RoleNamed {
				nameLen = uint64(len(t.Name))
			}
			if t.DataOffset != alignQSF(end+qsfRecordSize+nameLen) {
				return 0, qsfErr(ErrCorrupt, "index", -1, payload+start, "layer %d: tensor %q data offset %d out of place", i, t.Name, t.DataOffset)
			}
			end = alignQSF(t.DataOffset + t.Size)
			if end > uint64(e.Size) {
				break
			}
		}
		if end != uint64(e.Size) {
			return 0, qsfErr(ErrCorrupt, "index", -1, payload+start, "layer %d: tensors need %d bytes, the index says %d", i, end, e.Size)
		}
	}
	if pos != length {
		return 0, qsfErr(ErrCorrupt, "index", -1, payload+pos, "%d bytes after the directory", length-pos)
	}
	return next, nil
}

// layers checks where the layers lie; their contents are read on demand.
func (q *QSF) layers(off uint64) (uint64, error) {
	for i, e := range q.Layers {
		if e.Offset != off {
			return 0, qsfErr(ErrCorrupt, "index", i, q.Header.IndexOffset+qsfFrameSize+uint64(i)*qsfEntrySize, "layer %d at %d, expected at %d", i, e.Offset, off)
		}
		if uint64(e.StoredSize) > q.size-off {
			return 0, qsfErr(ErrCorrupt, "layer", i, off, "%d stored bytes run past the end of the file", e.StoredSize)
		}
		end := off + uint64(e.StoredSize)
		off = alignQSF(end)
		if off > q.size {
			return 0, qsfErr(ErrCorrupt, "layer", i, end, "padding runs past the end of the file")
		}
		if err := q.allZero(end, off-end, "layer", i); err != nil {
			return 0, err
		}
	}
	return off, nil
}

func (q *QSF) checkOpen() error {
	if q.owner != nil && q.owner.closed {
		return os.ErrClosed
	}
	return nil
}

// Sections returns the checksummed sections checked at open, in file
// order.
func (q *QSF) Sections() []QSFSection { return append([]QSFSection(nil), q.sections...) }

// ReadLayer reads layer i with one ReadAt, checks its CRC (unless the file
// was opened with DeferLayerCRC), decompresses it into dst when it has the
// capacity (a new slice otherwise) and checks its tensor records against
// the directory. It returns the layer payload: the tensors' data lie at
// their DataOffset in LayerTensors[i].
func (q *QSF) ReadLayer(i int, dst []byte) ([]byte, error) {
	return q.readLayer(i, dst, !q.deferCRC)
}

// VerifyLayer reads layer i and checks its CRC and contents, whatever the
// open options.
func (q *QSF) VerifyLayer(i int) error {
	_, err := q.readLayer(i, nil, true)
	return err
}

func (q *QSF) readLayer(i int, dst []byte, check bool) ([]byte, error) {
	if err := q.checkOpen(); err != nil {
		return nil, err
	}
	if i < 0 || i >= len(q.Layers) {
		return nil, fmt.Errorf("qsf: layer %d out of range [0, %d)", i, len(q.Layers))
	}
	e := q.Layers[i]
	size := int(e.Size)
	if cap(dst) < size {
		dst = make([]byte, size)
	}
	dst = dst[:size]
	var stored []byte
	if e.Compression == CompressNone && q.data == nil {
		if _, err := q.r.ReadAt(dst, int64(e.Offset)); err != nil {
			return nil, fmt.Errorf("qsf: layer %d: %w", i, err)
		}
		stored = dst
	} else {
		var err error
		if stored, err = q.fetch(e.Offset, uint64(e.StoredSize), "layer", i); err != nil {
			return nil, err
		}
	}
	if check {
		if crc := qsfCRC(stored); crc != e.CRC {
			return nil, qsfErr(ErrChecksum, "layer", i, e.Offset, "CRC %#08x, computed %#08x", e.CRC, crc)
		}
	}
	switch e.Compression {
	case CompressNone:
		if q.data != nil {
			copy(dst, stored)
		}
	default:
		n, err := lz4.UncompressBlock(stored, dst)
		if err != nil || n != size {
			return nil, qsfErr(ErrCorrupt, "layer", i, e.Offset, "LZ4 data does not decompress to %d bytes (%d, %v)", size, n, err)
		}
	}
	if err := q.checkRecords(i, dst); err != nil {
		return nil, err
	}
	return dst, nil
}

// checkRecords compares the tensor records in a layer payload with the
// directory.
func (q *QSF) checkRecords(i int, payload []byte) error {
	var pos, at uint64 // in the directory, in the payload
	for k, t := range q.LayerTensors[i] {
		n := uint64(qsfRecordSize + len(nameOf(t)))
		rec := q.dir[i][pos : pos+n]
		pos += n
		if at+n > uint64(len(payload)) || !bytes.Equal(payload[at:at+n], rec) {
			return qsfErr(ErrCorrupt, "layer", i, q.Layers[i].Offset, "tensor %d record differs from the directory", k)
		}
		at = alignQSF(t.DataOffset + t.Size)
	}
	return nil
}

func nameOf(t QSFTensor) string {
	if t.Role == RoleNamed {
		return t.Name
	}
	return ""
}

// layerPayload returns layer i's payload, reading, checking and caching it
// on first use. With a mapping, uncompressed layers alias the mapping.
func (q *QSF) layerPayload(i int) ([]byte, error) {
	c := &q.cache[i]
	c.once.Do(func() {
		e := q.Layers[i]
		if e.Compression == CompressNone && q.data != nil {
			p := q.data[e.Offset : e.Offset+uint64(e.Size) : e.Offset+uint64(e.Size)]
			if !q.deferCRC {
				if crc := qsfCRC(p); crc != e.CRC {
					c.err = qsfErr(ErrChecksum, "layer", i, e.Offset, "CRC %#08x, computed %#08x", e.CRC, crc)
					return
				}
			}
			if c.err = q.checkRecords(i, p); c.err == nil {
				c.data = p
			}
			return
		}
		c.data, c.err = q.ReadLayer(i, nil)
	})
	return c.data, c.err
}
