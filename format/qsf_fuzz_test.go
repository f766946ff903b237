package format

import (
	"bytes"
	"io"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// smallQSF writes the smallest useful QSF file: one layer (two if layers
// is 2), every tensor a few bytes, yet each section, the layer index and a
// layer record present, so that mutations reach the layer reader. The
// fuzzer minimizes every new input it finds, which costs about the square
// of the input's size in executions: seeds of a few hundred bytes keep it
// fuzzing instead of minimizing.
func smallQSF(tb testing.TB, layers int, comp Compression) []byte {
	tb.Helper()
	data := map[string][]byte{}
	mk := func(role Role, layer int, typ quant.Type, shape ...uint64) QSFTensor {
		t := QSFTensor{Role: role, Name: TensorName(role, layer), Shape: shape, Type: typ}
		size, err := tensorSize(shape, typ)
		if err != nil {
			tb.Fatal(err)
		}
		b := make([]byte, size)
		for i := range b {
			b[i] = byte(i % 3)
		}
		data[t.Name] = b
		return t
	}
	m := &QSFModel{
		Header: QSFHeader{Arch: ArchLlama, Position: PosRoPE, HiddenDim: 4, Heads: 1, KVHeads: 1, Vocab: 2,
			MaxSeqLen: 8, FFNDim: 4, HeadDim: 4, RopeTheta: 10000, BOS: 0, EOS: 1, PAD: -1},
		Arch:      ArchConfig{RopeDim: 4, RopeStyle: RopeNormal, NormEps: 1e-5, KeyDim: 4, ValueDim: 4},
		Tokenizer: &Metadata{},
		Metadata:  &Metadata{},
	}
	m.Tokenizer.Set("tokenizer.ggml.tokens", StringsValue([]string{"a", "b"}))
	m.Embedding = []QSFTensor{mk(RoleTokenEmbd, 0, quant.F32, 4, 2)}
	for l := range layers {
		m.Layers = append(m.Layers, []QSFTensor{mk(RoleAttnNorm, l, quant.F32, 4), mk(RoleQ, l, quant.F16, 4, 4)})
	}
	m.Final = []QSFTensor{mk(RoleOutputNorm, 0, quant.F32, 4)}
	var buf memOutput
	_, _, err := WriteQSF(&buf, m, func(place QSFPlacement, layer, i int, w io.Writer) error {
		var t QSFTensor
		switch place {
		case PlaceEmbedding:
			t = m.Embedding[i]
		case PlaceFinal:
			t = m.Final[i]
		default:
			t = m.Layers[layer][i]
		}
		_, err := w.Write(data[t.Name])
		return err
	}, QSFWriteOptions{Compression: comp})
	if err != nil {
		tb.Fatal(err)
	}
	return buf.b
}

// memOutput is a QSFOutput in memory.
type memOutput struct{ b []byte }

func (o *memOutput) Write(p []byte) (int, error) {
	o.b = append(o.b, p...)
	return len(p), nil
}

func (o *memOutput) WriteAt(p []byte, off int64) (int, error) {
	if end := int(off) + len(p); end > len(o.b) {
		o.b = append(o.b, make([]byte, end-len(o.b))...)
	}
	return copy(o.b[off:], p), nil
}

// qsfSeeds adds small QSF files, whole and cut, to a fuzz corpus.
func qsfSeeds(f *testing.F) {
	for _, comp := range []Compression{CompressNone, CompressLZ4} {
		for layers := 1; layers <= 2; layers++ {
			b := smallQSF(f, layers, comp)
			if err := readAllBytes(b, true); err != nil {
				f.Fatalf("seed (%d layers, %v) does not read: %v", layers, comp, err)
			}
			f.Add(b)
			f.Add(b[:len(b)/2])
		}
	}
	f.Add([]byte(QSFMagic))
}

// checkQSF reads every tensor and layer of b through both read paths; it
// fails only if the two paths disagree about whether b is valid.
func checkQSF(t *testing.T, b []byte) {
	for _, mapped := range []bool{false, true} {
		if err := readAllBytes(b, mapped); err != nil {
			continue
		}
		q, err := ReadQSF(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatalf("tensors read but ReadQSF failed: %v", err)
		}
		for i := range q.Layers {
			if _, err := q.ReadLayer(i, nil); err != nil {
				t.Fatalf("layer %d: tensors read but ReadLayer failed: %v", i, err)
			}
		}
	}
}

// FuzzReadQSF feeds arbitrary bytes to the QSF reader, through the
// memory-mapped and the ReadAt paths, and reads every tensor and layer of
// whatever opens. It must never panic or allocate beyond what the input
// justifies.
func FuzzReadQSF(f *testing.F) {
	qsfSeeds(f)
	f.Fuzz(checkQSF)
}

// FuzzReadQSFFixedCRC is FuzzReadQSF with the checksums repaired after
// mutation, so that the fuzzer reaches the structural checks behind them.
func FuzzReadQSFFixedCRC(f *testing.F) {
	qsfSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		fixCRCs(b)
		checkQSF(t, b)
	})
}

// fixCRCs recomputes, where the bytes allow, the header CRC, the section
// CRCs and the layer CRCs of a (possibly mangled) QSF file.
func fixCRCs(b []byte) {
	if len(b) < QSFHeaderSize {
		return
	}
	size := uint64(len(b))
	h := unmarshalHeader(b)
	fix := func(off uint64) (payload, length uint64, ok bool) {
		if off > size || size-off < qsfFrameSize {
			return 0, 0, false
		}
		length = le.Uint64(b[off+8:])
		payload = off + qsfFrameSize
		if length > size-payload {
			return 0, 0, false
		}
		le.PutUint32(b[off+4:], qsfCRC(b[payload:payload+length]))
		return payload, length, true
	}
	fix(QSFHeaderSize)
	for _, off := range []uint64{h.TokenizerOffset, h.MetadataOffset, h.EmbeddingOffset, h.FinalOffset} {
		fix(off)
	}
	// Layer CRCs live in the index, so fix them before the index CRC.
	if payload, length, ok := fix(h.IndexOffset); ok {
		for i := uint64(0); i < uint64(h.Layers) && (i+1)*qsfEntrySize <= length; i++ {
			eb := b[payload+i*qsfEntrySize:]
			e := getEntry(eb)
			if e.Offset <= size && uint64(e.StoredSize) <= size-e.Offset {
				le.PutUint32(eb[20:], qsfCRC(b[e.Offset:e.Offset+uint64(e.StoredSize)]))
			}
		}
		fix(h.IndexOffset)
	}
	le.PutUint32(b[qsfHeaderCRCAt:], qsfCRC(b[:qsfHeaderCRCAt]))
}
