// Package qsf runs large language models on the CPU, in-process, in pure
// Go. Load a GGUF model file, open a Session (one conversation with its own
// KV cache) and stream tokens through a callback:
//
//	m, err := qsf.Load("model.gguf", qsf.Config{})
//	if err != nil { ... }
//	defer m.Close()
//	s, err := m.NewSession()
//	if err != nil { ... }
//	defer s.Close()
//	_, err = s.Generate(ctx, "Once upon a time", qsf.GenerateOptions{MaxTokens: 64},
//		func(t qsf.Token) error { fmt.Print(t.Text); return nil })
//
// A Model is immutable and safe for concurrent use; each Session belongs to
// one goroutine at a time. Numerics follow llama.cpp's CPU backend
// (activation quantization included), so greedy decoding gives the same
// tokens as llama.cpp on the same file.
package qsf

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/klauspost/cpuid/v2"
	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/kernels"
	"github.com/qsf-llm/qsf/model"
	"github.com/qsf-llm/qsf/quant"
	"github.com/qsf-llm/qsf/tokenizer"
)

// Errors that callers may act on. Errors returned by this package wrap
// them (errors.Is) or the errors of packages format and model.
var (
	// ErrClosed is returned when a closed Model or Session is used.
	ErrClosed = errors.New("qsf: closed")
	// ErrContextFull is returned when a session has no room for more
	// tokens.
	ErrContextFull = errors.New("qsf: context is full")
	// ErrUnsupported is returned for a model QSF cannot run (architecture,
	// tensor type); the message names what is unsupported.
	ErrUnsupported = errors.New("qsf: unsupported model")
)

// Model is a loaded model: weights, hyperparameters and tokenizer. It is
// immutable and safe to share between goroutines and sessions.
type Model struct {
	cfg    Config
	file   *format.File
	net    *model.Model
	tok    *tokenizer.Tokenizer
	ctx    int
	mu     sync.Mutex
	closed bool
}

// Load opens a model file and prepares it for inference. The weights stay
// in the (memory-mapped) file; nothing is copied.
func Load(path string, cfg Config) (*Model, error) {
	if cfg.Kernel != "" {
		if err := kernels.SetTier(cfg.Kernel); err != nil {
			return nil, fmt.Errorf("qsf: %w", err)
		}
	}
	f, err := format.OpenWith(path, format.OpenOptions{NoMmap: cfg.NoMmap})
	if err != nil {
		return nil, fmt.Errorf("qsf: load %s: %w", path, err)
	}
	m, err := newModel(f, cfg)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("qsf: load %s: %w", path, err)
	}
	return m, nil
}

func newModel(f *format.File, cfg Config) (*Model, error) {
	md := &f.Metadata
	arch, _ := md.String("general.architecture")
	if !model.Supported(arch) {
		return nil, fmt.Errorf("%w: architecture %q", ErrUnsupported, arch)
	}
	embd, ok := f.Tensor("token_embd.weight")
	if !ok {
		return nil, fmt.Errorf("%w: token_embd.weight", model.ErrMissingTensor)
	}
	hp, err := model.ParseHparams(md, embd.Rows())
	if err != nil {
		return nil, err
	}
	weights, err := model.LoadWeights(&hp, func(name string) (model.Tensor, bool, error) {
		ti, ok := f.Tensor(name)
		if !ok {
			return model.Tensor{}, false, nil
		}
		data, err := f.TensorData(ti)
		if err != nil {
			return model.Tensor{}, false, err
		}
		return model.Tensor{Name: name, Type: ti.Type, Rows: ti.Rows(), Cols: ti.Cols(), Data: data}, true, nil
	})
	if err != nil {
		if errors.Is(err, quant.ErrUnsupported) {
			return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
		}
		return nil, err
	}
	tok, err := tokenizer.FromGGUF(md)
	if err != nil {
		return nil, err
	}
	ctx := cfg.ContextLength
	if ctx <= 0 {
		ctx = min(hp.CtxLen, DefaultContextLength)
	}
	if hp.LearnedPos {
		if pe := weights.PosEmbd.Rows; ctx > pe {
			ctx = pe
		}
	}
	return &Model{cfg: cfg, file: f, net: &model.Model{Hparams: hp, Weights: weights}, tok: tok, ctx: ctx}, nil
}

// Close releases the model file. Sessions of a closed model must not be
// used.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	return m.file.Close()
}

// Info describes a loaded model.
type Info struct {
	Architecture  string
	Name          string
	Layers        int
	Embedding     int
	Heads         int
	KVHeads       int
	FFN           int
	Vocab         int
	ContextLength int // positions per session
	TrainContext  int // the model's trained context length
	WeightBytes   int64
	Kernel        string
}

// Info returns the model's hyperparameters.
func (m *Model) Info() Info {
	hp := &m.net.Hparams
	name, _ := m.file.Metadata.String("general.name")
	var bytes int64
	for i := range m.file.Tensors {
		bytes += int64(m.file.Tensors[i].Size)
	}
	return Info{
		Architecture: hp.Arch, Name: name, Layers: hp.Layers, Embedding: hp.Embd,
		Heads: hp.Heads, KVHeads: hp.KVHeads, FFN: hp.FFN, Vocab: hp.Vocab,
		ContextLength: m.ctx, TrainContext: hp.CtxLen, WeightBytes: bytes,
		Kernel: kernels.Tier(),
	}
}

// TokenizeOptions control Tokenize.
type TokenizeOptions struct {
	// NoSpecial leaves out the BOS/EOS tokens the vocabulary adds.
	NoSpecial bool
	// ParseSpecial matches special-token text such as "<s>" as the special
	// token instead of plain text.
	ParseSpecial bool
}

// Tokenize converts text to token ids, adding BOS (and EOS) as the
// model's vocabulary asks unless opts.NoSpecial.
func (m *Model) Tokenize(text string, opts TokenizeOptions) []int {
	return m.tok.Encode(text, tokenizer.EncodeOptions{AddSpecial: !opts.NoSpecial, ParseSpecial: opts.ParseSpecial})
}

// Detokenize converts token ids back to text. Special tokens such as BOS
// produce no text.
func (m *Model) Detokenize(ids []int) string { return m.tok.Decode(ids) }

// Piece returns the text of one token, as Detokenize would give it.
func (m *Model) Piece(id int) string { return m.tok.Piece(id) }

// IsEndOfGeneration reports whether id ends generation (EOS, EOT, ...).
func (m *Model) IsEndOfGeneration(id int) bool { return m.tok.IsEOG(id) }

// BOS returns the beginning-of-sequence token id, or -1.
func (m *Model) BOS() int { return m.tok.BOS() }

func defaultThreads() int {
	if n := cpuid.CPU.PhysicalCores; n > 0 {
		return min(n, runtime.NumCPU())
	}
	return runtime.NumCPU()
}
