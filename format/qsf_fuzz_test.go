package format

import (
	"bytes"
	"encoding/binary"
	"io"
	"slices"
	"sync"
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
	fail := func(err error) {
		if tb == nil {
			panic(err)
		}
		tb.Helper()
		tb.Fatal(err)
	}
	data := map[string][]byte{}
	mk := func(role Role, layer int, typ quant.Type, shape ...uint64) QSFTensor {
		t := QSFTensor{Role: role, Name: TensorName(role, layer), Shape: shape, Type: typ}
		size, err := tensorSize(shape, typ)
		if err != nil {
			fail(err)
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
		fail(err)
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

// The QSF fuzz targets do not take files as their inputs: the fuzzer
// minimizes every input that reaches new code, trying about n²/2 shorter
// versions of an n-byte input, and even the smallest valid QSF file (about
// 1 KB, for its header, section frames and alignment) made that take most
// of a run (FuzzReadQSF stalled at 0 executions per second). Their input
// is instead a short edit script applied to one of a few valid files, so
// that inputs stay a few bytes long and mutations still reach every byte.

// fuzzBases are the valid files the edit scripts start from: one and two
// layers, uncompressed and LZ4.
var fuzzBases = sync.OnceValue(func() [][]byte {
	var out [][]byte
	for _, comp := range []Compression{CompressNone, CompressLZ4} {
		for layers := 1; layers <= 2; layers++ {
			out = append(out, smallQSF(nil, layers, comp))
		}
	}
	return out
})

// editQSF applies the edit script e to a copy of a base file: e[0] picks
// the base, then every 4 bytes are an edit: a position (uint16, taken
// modulo the current length), an operation and a value. The operations set
// the byte, xor it, insert the value before it, cut the file there, or
// write the value as a little-endian uint32 (lengths, offsets, counts).
func editQSF(e []byte) []byte {
	bases := fuzzBases()
	if len(e) == 0 {
		return nil
	}
	b := append([]byte(nil), bases[int(e[0])%len(bases)]...)
	for e = e[1:]; len(e) >= 4 && len(b) > 0; e = e[4:] {
		i := int(binary.LittleEndian.Uint16(e)) % len(b)
		v := e[3]
		switch e[2] % 5 {
		case 0:
			b[i] = v
		case 1:
			b[i] ^= v
		case 2:
			b = slices.Insert(b, i, v)
		case 3:
			b = b[:i]
		case 4:
			if i+4 <= len(b) {
				binary.LittleEndian.PutUint32(b[i:], uint32(v)*uint32(v)*97)
			}
		}
	}
	return b
}

// qsfSeeds adds edit scripts to a fuzz corpus: each base untouched, cut,
// and with a byte changed in its header, its index and its last layer.
func qsfSeeds(f *testing.F) {
	for i, b := range fuzzBases() {
		if err := readAllBytes(b, true); err != nil {
			f.Fatalf("base %d does not read: %v", i, err)
		}
		n := uint16(len(b))
		f.Add([]byte{byte(i)})
		for _, at := range []uint16{n / 2, 40, n - 200, n - 40} {
			f.Add([]byte{byte(i), byte(at), byte(at >> 8), 3, 0})
			f.Add([]byte{byte(i), byte(at), byte(at >> 8), 1, 0x41})
			f.Add([]byte{byte(i), byte(at), byte(at >> 8), 4, 0xff})
		}
	}
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

// FuzzReadQSF feeds mangled QSF files (see editQSF) to the QSF reader,
// through the memory-mapped and the ReadAt paths, and reads every tensor
// and layer of whatever opens. It must never panic or allocate beyond what
// the input justifies. Arbitrary bytes as a whole file are covered by
// FuzzReadGGUF's reader front end and TestQSFEveryByteFlip.
func FuzzReadQSF(f *testing.F) {
	qsfSeeds(f)
	f.Fuzz(func(t *testing.T, e []byte) {
		checkQSF(t, editQSF(e))
	})
}

// FuzzReadQSFFixedCRC is FuzzReadQSF with the checksums repaired after
// mutation, so that the fuzzer reaches the structural checks behind them.
func FuzzReadQSFFixedCRC(f *testing.F) {
	qsfSeeds(f)
	f.Fuzz(func(t *testing.T, e []byte) {
		b := editQSF(e)
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
