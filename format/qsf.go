package format

import (
	"fmt"
	"hash/crc32"
	"math"

	"github.com/qsf-llm/qsf/quant"
)

// QSF constants. docs/FORMAT.md is the byte-level specification.
const (
	// QSFMagic is the first four bytes of every QSF file.
	QSFMagic = "QSF1"
	// QSFVersion is the QSF version read and written by this package.
	QSFVersion = 1
	// QSFHeaderSize is the size of the fixed header.
	QSFHeaderSize = 128
	// QSFAlignment is the alignment of sections, layers and tensor data.
	QSFAlignment = 32

	qsfFrameSize   = 32 // section frame: tag, crc, length, reserved
	qsfArchSize    = 64 // ARCH payload, version 1
	qsfEntrySize   = 32 // layer-index entry
	qsfRecordSize  = 40 // tensor record, without its name
	qsfMaxNameLen  = 1 << 12
	qsfHeaderCRCAt = 120
)

// Section tags.
const (
	tagArch      = "ARCH"
	tagTokenizer = "TOKN"
	tagMetadata  = "META"
	tagIndex     = "LIDX"
	tagEmbedding = "EMBD"
	tagFinal     = "FINL"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// qsfCRC returns the CRC-32C of p.
func qsfCRC(p []byte) uint32 { return crc32.Checksum(p, castagnoli) }

// Arch is a QSF architecture code.
type Arch uint16

// Architecture codes.
const (
	ArchCustom  Arch = 0 // named by the metadata key general.architecture
	ArchGPT2    Arch = 1
	ArchLlama   Arch = 2
	ArchMistral Arch = 3 // LLaMA layout
	ArchPhi3    Arch = 4
	ArchQwen2   Arch = 5
	ArchQwen3   Arch = 6
	ArchGemma   Arch = 7
)

var archNames = [...]string{"", "gpt2", "llama", "llama", "phi3", "qwen2", "qwen3", "gemma"}

// GGUFName returns the general.architecture name QSF presents for a, or ""
// for ArchCustom and unknown codes.
func (a Arch) GGUFName() string {
	if int(a) < len(archNames) {
		return archNames[a]
	}
	return ""
}

// String returns the name of the architecture as docs/FORMAT.md spells it.
func (a Arch) String() string {
	switch a {
	case ArchCustom:
		return "custom"
	case ArchMistral:
		return "mistral"
	}
	if n := a.GGUFName(); n != "" {
		return n
	}
	return fmt.Sprintf("arch(%d)", uint16(a))
}

// Activation is the FFN non-linearity code of a QSF header.
type Activation uint8

// Activation codes.
const (
	ActSiLU  Activation = 0
	ActGELU  Activation = 1
	ActReLU  Activation = 2
	ActGeGLU Activation = 3
)

// String returns the name of the activation as docs/FORMAT.md spells it.
func (a Activation) String() string {
	return codeName(uint8(a), []string{"SiLU", "GELU", "ReLU", "GeGLU"})
}

// Norm is the normalization code of a QSF header.
type Norm uint8

// Normalization codes.
const (
	NormRMS   Norm = 0
	NormLayer Norm = 1
)

// String returns the name of the norm as docs/FORMAT.md spells it.
func (n Norm) String() string { return codeName(uint8(n), []string{"RMSNorm", "LayerNorm"}) }

// Position is the position-encoding code of a QSF header.
type Position uint8

// Position-encoding codes.
const (
	PosNone    Position = 0
	PosLearned Position = 1
	PosRoPE    Position = 2
	PosALiBi   Position = 3
)

// String returns the name of the position encoding as docs/FORMAT.md spells it.
func (p Position) String() string {
	return codeName(uint8(p), []string{"none", "learned", "RoPE", "ALiBi"})
}

// RopeStyle says which dimensions RoPE rotates together.
type RopeStyle uint8

// RoPE styles.
const (
	RopeNone   RopeStyle = 0
	RopeNormal RopeStyle = 1 // pairs (2i, 2i+1): LLaMA, llama2.c
	RopeNeoX   RopeStyle = 2 // pairs (i, i+d/2): Qwen, Gemma, Phi-3
)

// String returns the name of the RoPE style as docs/FORMAT.md spells it.
func (r RopeStyle) String() string { return codeName(uint8(r), []string{"none", "normal", "neox"}) }

// Compression is the compression of a stored layer.
type Compression uint8

// Compression codes.
const (
	CompressNone  Compression = 0
	CompressLZ4   Compression = 1
	CompressLZ4HC Compression = 2
)

// String returns the name of the compression as docs/FORMAT.md spells it.
func (c Compression) String() string { return codeName(uint8(c), []string{"none", "lz4", "lz4hc"}) }

// ParseCompression returns the compression named s ("none", "lz4",
// "lz4hc").
func ParseCompression(s string) (Compression, error) {
	for c, name := range []string{"none", "lz4", "lz4hc"} {
		if s == name {
			return Compression(c), nil
		}
	}
	return 0, fmt.Errorf("qsf: unknown compression %q (want none, lz4 or lz4hc)", s)
}

func codeName(c uint8, names []string) string {
	if int(c) < len(names) {
		return names[c]
	}
	return fmt.Sprintf("code(%d)", c)
}

// Header flags.
const (
	// FlagTiedEmbeddings means the model has no LM head tensor and reuses
	// the token embedding.
	FlagTiedEmbeddings = 1 << 0
)

// ARCH feature bits (informational: the tensors present decide).
const (
	FeatQKNorm        = 1 << 0
	FeatQKVBias       = 1 << 1
	FeatOutBias       = 1 << 2
	FeatFFNBias       = 1 << 3
	FeatGatedFFN      = 1 << 4
	FeatFusedQKV      = 1 << 5
	FeatFusedGateUp   = 1 << 6
	FeatEmbedScale    = 1 << 7
	qsfKnownFeatures  = 1<<8 - 1
	qsfKnownHdrFlags  = FlagTiedEmbeddings
	qsfMaxArch        = ArchGemma
	qsfMaxActivation  = ActGeGLU
	qsfMaxPosition    = PosALiBi
	qsfMaxCompression = CompressLZ4HC
)

// QSFHeader is the 128-byte header of a QSF file.
type QSFHeader struct {
	Version      uint16
	HeaderSize   uint16
	Arch         Arch
	Activation   Activation
	Norm         Norm
	Position     Position
	Flags        uint8
	Layers       uint32
	HiddenDim    uint32
	Heads        uint32
	KVHeads      uint32
	Vocab        uint32
	MaxSeqLen    uint32
	FFNDim       uint32
	HeadDim      uint32
	DefaultQuant quant.Type
	RopeTheta    float32
	BOS, EOS     int32 // -1 when absent
	PAD          int32 // -1 when absent
	Alignment    uint32

	IndexOffset     uint64
	EmbeddingOffset uint64
	FinalOffset     uint64
	TokenizerOffset uint64
	MetadataOffset  uint64
	FileSize        uint64
	CRC             uint32
}

// Tied reports whether the LM head is the token embedding.
func (h *QSFHeader) Tied() bool { return h.Flags&FlagTiedEmbeddings != 0 }

// marshal encodes h into 128 bytes, computing the CRC.
func (h *QSFHeader) marshal() []byte {
	b := make([]byte, QSFHeaderSize)
	copy(b, QSFMagic)
	le.PutUint16(b[4:], h.Version)
	le.PutUint16(b[6:], h.HeaderSize)
	le.PutUint16(b[8:], uint16(h.Arch))
	b[10], b[11], b[12], b[13] = uint8(h.Activation), uint8(h.Norm), uint8(h.Position), h.Flags
	for i, x := range []uint32{h.Layers, h.HiddenDim, h.Heads, h.KVHeads, h.Vocab, h.MaxSeqLen, h.FFNDim, h.HeadDim,
		uint32(h.DefaultQuant), math.Float32bits(h.RopeTheta), uint32(h.BOS), uint32(h.EOS), uint32(h.PAD), h.Alignment} {
		le.PutUint32(b[16+4*i:], x)
	}
	for i, x := range []uint64{h.IndexOffset, h.EmbeddingOffset, h.FinalOffset, h.TokenizerOffset, h.MetadataOffset, h.FileSize} {
		le.PutUint64(b[72+8*i:], x)
	}
	h.CRC = qsfCRC(b[:qsfHeaderCRCAt])
	le.PutUint32(b[qsfHeaderCRCAt:], h.CRC)
	return b
}

// unmarshalHeader decodes the 128 header bytes b without validating them.
func unmarshalHeader(b []byte) QSFHeader {
	var h QSFHeader
	h.Version = le.Uint16(b[4:])
	h.HeaderSize = le.Uint16(b[6:])
	h.Arch = Arch(le.Uint16(b[8:]))
	h.Activation, h.Norm, h.Position, h.Flags = Activation(b[10]), Norm(b[11]), Position(b[12]), b[13]
	u := func(i int) uint32 { return le.Uint32(b[16+4*i:]) }
	h.Layers, h.HiddenDim, h.Heads, h.KVHeads = u(0), u(1), u(2), u(3)
	h.Vocab, h.MaxSeqLen, h.FFNDim, h.HeadDim = u(4), u(5), u(6), u(7)
	h.DefaultQuant, h.RopeTheta = quant.Type(u(8)), math.Float32frombits(u(9))
	h.BOS, h.EOS, h.PAD, h.Alignment = int32(u(10)), int32(u(11)), int32(u(12)), u(13)
	q := func(i int) uint64 { return le.Uint64(b[72+8*i:]) }
	h.IndexOffset, h.EmbeddingOffset, h.FinalOffset = q(0), q(1), q(2)
	h.TokenizerOffset, h.MetadataOffset, h.FileSize = q(3), q(4), q(5)
	h.CRC = le.Uint32(b[qsfHeaderCRCAt:])
	return h
}

// ArchConfig is the architecture-config section: what the forward pass
// needs beyond the header.
type ArchConfig struct {
	RopeDim       uint32    // dimensions per head RoPE rotates
	RopeStyle     RopeStyle // pairing of rotated dimensions
	Features      uint16    // Feat* bits
	NormEps       float32   // epsilon of every norm
	KeyDim        uint32    // per-head width of queries and keys
	ValueDim      uint32    // per-head width of values
	SlidingWindow uint32    // 0 for none
	RopeScaling   uint32    // 0 none, 1 linear, 2 YaRN
	RopeScale     float32
	RopeOrigCtx   uint32
	AttnSoftcap   float32
	FinalSoftcap  float32
}

func (a *ArchConfig) marshal() []byte {
	b := make([]byte, qsfArchSize)
	le.PutUint32(b[0:], a.RopeDim)
	b[4] = uint8(a.RopeStyle)
	le.PutUint16(b[6:], a.Features)
	for i, x := range []uint32{math.Float32bits(a.NormEps), a.KeyDim, a.ValueDim, a.SlidingWindow, a.RopeScaling,
		math.Float32bits(a.RopeScale), a.RopeOrigCtx, math.Float32bits(a.AttnSoftcap), math.Float32bits(a.FinalSoftcap)} {
		le.PutUint32(b[8+4*i:], x)
	}
	return b
}

func unmarshalArch(b []byte) ArchConfig {
	u := func(i int) uint32 { return le.Uint32(b[8+4*i:]) }
	f := func(i int) float32 { return math.Float32frombits(u(i)) }
	return ArchConfig{
		RopeDim: le.Uint32(b), RopeStyle: RopeStyle(b[4]), Features: le.Uint16(b[6:]),
		NormEps: f(0), KeyDim: u(1), ValueDim: u(2), SlidingWindow: u(3), RopeScaling: u(4),
		RopeScale: f(5), RopeOrigCtx: u(6), AttnSoftcap: f(7), FinalSoftcap: f(8),
	}
}

// LayerEntry is one entry of the layer index.
type LayerEntry struct {
	Offset      uint64 // file offset of the stored bytes
	StoredSize  uint32 // bytes in the file
	Size        uint32 // bytes once decompressed
	Quant       quant.Type
	Compression Compression
	Tensors     uint8
	CRC         uint32 // CRC-32C of the stored bytes
	Importance  float32
}

func (e *LayerEntry) put(b []byte) {
	le.PutUint64(b, e.Offset)
	le.PutUint32(b[8:], e.StoredSize)
	le.PutUint32(b[12:], e.Size)
	le.PutUint16(b[16:], uint16(e.Quant))
	b[18], b[19] = uint8(e.Compression), e.Tensors
	le.PutUint32(b[20:], e.CRC)
	le.PutUint32(b[24:], math.Float32bits(e.Importance))
	le.PutUint32(b[28:], 0)
}

func getEntry(b []byte) LayerEntry {
	return LayerEntry{
		Offset: le.Uint64(b), StoredSize: le.Uint32(b[8:]), Size: le.Uint32(b[12:]),
		Quant: quant.Type(le.Uint16(b[16:])), Compression: Compression(b[18]), Tensors: b[19],
		CRC: le.Uint32(b[20:]), Importance: math.Float32frombits(le.Uint32(b[24:])),
	}
}

// QSFTensor describes one tensor of a QSF file: its role, shape and type
// and, once written or read, where its data lies in its payload.
type QSFTensor struct {
	Role Role
	// Name is the GGUF name the tensor is presented under. For RoleNamed
	// it is stored in the file; otherwise it follows from the role and
	// layer.
	Name  string
	Shape []uint64 // [cols] or [cols, rows], ggml order
	Type  quant.Type
	// DataOffset is the offset of the data from the start of the payload
	// (section or decompressed layer), and Size its length.
	DataOffset uint64
	Size       uint64
}

// Cols returns the row length.
func (t *QSFTensor) Cols() uint64 { return t.Shape[0] }

// Rows returns the number of rows (1 for a vector).
func (t *QSFTensor) Rows() uint64 {
	if len(t.Shape) < 2 {
		return 1
	}
	return t.Shape[1]
}

// record encodes the tensor record and name of t.
func (t *QSFTensor) record() []byte {
	name := ""
	if t.Role == RoleNamed {
		name = t.Name
	}
	b := make([]byte, qsfRecordSize+len(name))
	le.PutUint16(b, uint16(t.Role))
	b[2] = uint8(len(t.Shape))
	le.PutUint32(b[4:], uint32(t.Type))
	le.PutUint64(b[8:], t.Cols())
	le.PutUint64(b[16:], t.Rows())
	le.PutUint64(b[24:], t.DataOffset)
	le.PutUint32(b[32:], uint32(len(name)))
	if t.Type == quant.I2_S { // bytes beyond the shape's size (see the FORMAT.md tensor records)
		base, _ := tensorSize(t.Shape, t.Type)
		le.PutUint32(b[36:], uint32(t.Size-base))
	}
	copy(b[qsfRecordSize:], name)
	return b
}

func alignQSF(x uint64) uint64 { return alignUp(x, QSFAlignment) }
