package synth

import (
	"errors"
	"fmt"

	"github.com/qsf-llm/qsf/quant"
)

// ErrUnknownFileType is returned by ParseFileType for a name it does not
// know.
var ErrUnknownFileType = errors.New("synth: unknown file type")

// FileType is a tensor type mix, numbered as llama.cpp's llama_ftype (the
// value of general.file_type).
type FileType uint32

// The file types synth writes.
const (
	F32   FileType = 0  // every tensor F32
	F16   FileType = 1  // 2-D tensors F16, vectors F32
	Q4_0  FileType = 2  // llama-quantize Q4_0: Q4_0, output Q6_K
	Q8_0  FileType = 7  // llama-quantize Q8_0: every 2-D tensor Q8_0
	Q4_KM FileType = 15 // llama-quantize Q4_K_M: Q4_K with Q6_K where it spends more bits
	TQ1_0 FileType = 36 // llama-quantize TQ1_0: ternary TQ1_0, output Q6_K, an untied token_embd Q4_K
	TQ2_0 FileType = 37 // llama-quantize TQ2_0: ternary TQ2_0, output Q6_K, an untied token_embd Q4_K
)

var fileTypeNames = []struct {
	ft   FileType
	name string
}{{F32, "f32"}, {F16, "f16"}, {Q8_0, "q8_0"}, {Q4_0, "q4_0"}, {Q4_KM, "q4_k_m"}, {TQ1_0, "tq1_0"}, {TQ2_0, "tq2_0"}}

// FileTypeNames returns the names ParseFileType accepts.
func FileTypeNames() []string {
	names := make([]string, len(fileTypeNames))
	for i, f := range fileTypeNames {
		names[i] = f.name
	}
	return names
}

// ParseFileType returns the file type called name ("f32", "f16", "q8_0",
// "q4_0", "q4_k_m", "tq1_0" or "tq2_0", in any case).
func ParseFileType(name string) (FileType, error) {
	for _, f := range fileTypeNames {
		if equalFold(f.name, name) {
			return f.ft, nil
		}
	}
	return 0, fmt.Errorf("%w %q (known: %v)", ErrUnknownFileType, name, FileTypeNames())
}

// String returns the file type's name, e.g. "q4_k_m".
func (ft FileType) String() string {
	for _, f := range fileTypeNames {
		if f.ft == ft {
			return f.name
		}
	}
	return fmt.Sprintf("filetype(%d)", uint32(ft))
}

// baseType is the type most 2-D tensors get.
func (ft FileType) baseType() (quant.Type, bool) {
	switch ft {
	case F32:
		return quant.F32, true
	case F16:
		return quant.F16, true
	case Q4_0:
		return quant.Q4_0, true
	case Q8_0:
		return quant.Q8_0, true
	case Q4_KM:
		return quant.Q4_K, true
	case TQ1_0:
		return quant.TQ1_0, true
	case TQ2_0:
		return quant.TQ2_0, true
	}
	return 0, false
}

// quantized reports whether llama-quantize's per-tensor rules apply.
func (ft FileType) quantized() bool { return ft != F32 && ft != F16 }

// useMoreBits is llama-quantize's choice of the layers that get more bits
// in the *_M mixes: the first and last eighth and every third in between.
func useMoreBits(layer, layers int) bool {
	return layer < layers/8 || layer >= 7*layers/8 || (layer-layers/8)%3 == 2
}

// tensorType returns the type llama-quantize's default rules
// (llama_tensor_get_type in src/llama-quant.cpp) give tensor l of shape s
// for file type ft. Vectors stay F32.
func (ft FileType) tensorType(s Shape, l layout) (quant.Type, error) {
	base, ok := ft.baseType()
	if !ok {
		return 0, fmt.Errorf("%w: %d", ErrUnknownFileType, uint32(ft))
	}
	if l.ne1 == 0 || l.role == roleRouter {
		return quant.F32, nil
	}
	if !ft.quantized() {
		return base, nil
	}
	t := base
	isOutput := l.role == roleOutput || (s.TiedEmbeddings && l.role == roleTokenEmbd)
	switch {
	case isOutput:
		// The LM head (or the token embedding standing in for it).
		if l.ne0%base.BlockSize() != 0 {
			t = quant.Q8_0
		} else if base != quant.Q8_0 {
			t = quant.Q6_K
		}
	case l.role == roleTokenEmbd && (ft == TQ1_0 || ft == TQ2_0):
		t = quant.Q4_K // llama-quantize's choice for ternary mixes
	case l.role == roleAttnV && ft == Q4_KM:
		// attn_v is counted in layer order, as llama.cpp sorts
		// tensors by block number before quantizing.
		if useMoreBits(l.layer, s.Layers) {
			t = quant.Q6_K
		}
	case l.role == roleFFNDown && ft == Q4_KM:
		if useMoreBits(l.layer, s.Layers) {
			t = quant.Q6_K
		}
	}
	if l.ne0%t.BlockSize() != 0 {
		// llama-quantize's fallback for rows that are not whole blocks.
		switch t {
		case quant.Q4_K:
			t = quant.Q5_0
		case quant.Q6_K:
			t = quant.Q8_0
		case quant.TQ1_0, quant.TQ2_0:
			t = quant.Q4_0 // llama-quantize: "use a symmetric type instead" is its TODO
		default:
			return 0, fmt.Errorf("synth: tensor %s: rows of %d are not whole %v blocks", l.name, l.ne0, t)
		}
		if l.ne0%t.BlockSize() != 0 {
			t = quant.F16
		}
	}
	return t, nil
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		ca, cb := a[i], b[i]
		if 'A' <= ca && ca <= 'Z' {
			ca += 'a' - 'A'
		}
		if 'A' <= cb && cb <= 'Z' {
			cb += 'a' - 'A'
		}
		if ca != cb {
			return false
		}
	}
	return true
}
