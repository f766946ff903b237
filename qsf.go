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
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/cpuid/v2"
	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/grammar"
	"github.com/qsf-llm/qsf/internal/load"
	"github.com/qsf-llm/qsf/kernels"
	"github.com/qsf-llm/qsf/kvcache"
	"github.com/qsf-llm/qsf/model"
	"github.com/qsf-llm/qsf/plan"
	"github.com/qsf-llm/qsf/stream"
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
	ErrUnsupported = load.ErrUnsupported
	// ErrBudget is returned by Load when the model cannot run within
	// Config.RAMBudget; the message states the smallest budget that works.
	ErrBudget = plan.ErrBudget
)

// Model is a loaded model: weights, hyperparameters and tokenizer. It is
// immutable and safe to share between goroutines and sessions.
type Model struct {
	cfg  Config
	file *format.File
	net  *model.Model
	tok  *tokenizer.Tokenizer
	ctx  int
	tier *kernels.Tier // the model's kernels (Config.Kernel)
	pool *kernels.Pool // the worker threads every session of the model shares

	// use guards the weights: every computation holds it for reading,
	// Close takes it for writing, so Close waits for computations in
	// flight and nothing reads freed memory. closed makes computations
	// stop at their next token and new ones fail with ErrClosed.
	use    sync.RWMutex
	closed atomic.Bool

	// loaded is what Load prepared (load.Model): the fields below are
	// its, kept under the names the rest of the package uses.
	loaded   *load.Model
	memLimit int64 // suggested Go memory limit in streaming mode, or 0

	plan    *plan.Plan       // the memory plan
	layout  *stream.Layout   // non-nil in streaming mode
	layers  *layerStreaming  // layer streaming: the reader its sessions share
	experts *expertStreaming // non-nil in expert streaming mode
	kv      kvcache.Options

	vocabOnce sync.Once
	vocab     *grammar.Vocab // the tokens for grammar filtering, built on first use
}

// Load opens a model file and prepares it for inference. The weights are
// memory-mapped (read into memory with Config.NoMmap), except that Q4_0 and
// Q8_0 matrices, and QSF's rotated ones where the tier has kernels for
// their repacked layouts, are repacked into process memory unless
// Config.NoRepack is set; under Config.RAMBudget the plan decides (see package plan). Load
// changes no process-wide state: the kernel tier, threads and memory plan
// belong to the model.
func Load(path string, cfg Config) (*Model, error) {
	cfg.clampThreads()
	name := cfg.Kernel
	if name == "" {
		name = os.Getenv("QSF_KERNEL")
	}
	tier, err := kernels.TierNamed(name)
	if err != nil {
		return nil, fmt.Errorf("qsf: %w", err)
	}
	start := time.Now()
	opts := cfg.loadOptions()
	opts.Tier = tier
	lm, err := load.Open(path, opts)
	if err != nil {
		return nil, err
	}
	m := &Model{cfg: cfg, loaded: lm, file: lm.File, net: lm.Net, tok: lm.Tok, ctx: lm.Ctx, kv: lm.KV,
		plan: lm.Plan, layout: lm.Layout, memLimit: lm.MemoryLimit}
	if lm.Experts != nil {
		if m.experts, err = openExperts(lm.Experts, path, lm.Plan); err != nil {
			lm.Close()
			return nil, err
		}
	}
	if m.layout != nil {
		if m.layers, err = m.openLayers(); err != nil {
			lm.Close()
			return nil, fmt.Errorf("qsf: %w", err)
		}
	}
	threads := cfg.threads()
	m.tier = tier
	m.pool = kernels.NewPoolTier(tier, threads)
	if m.layout != nil {
		// Layer streaming reads on a goroutine of its own, which needs a
		// CPU while the pool's workers wait for the layers it reads.
		m.pool.SetSpinTime(streamSpin)
	}
	if m.experts != nil && threads >= runtime.GOMAXPROCS(0) {
		// No CPU is left for the expert cache's reader: the forward
		// pass reads with all its threads (see SetParallel).
		m.experts.cache.SetParallel(m.pool.Parallel)
	}
	// A Model dropped without Close still stops its workers (and its
	// layer reader).
	runtime.AddCleanup(m, func(p *kernels.Pool) { p.Close() }, m.pool)
	if m.layers != nil {
		m.layers.cleanup = runtime.AddCleanup(m, streamResources.close, streamResources{m.layers.src, m.layers.arena})
	}
	cfg.logger().Debug("loaded", "path", path, "mode", m.plan.Mode, "context", m.ctx, "kv", m.kv.Type.String(),
		"threads", threads, "kernel", tier.Name(), "repacked", lm.Packed != nil, "elapsed", time.Since(start))
	return m, nil
}

// streamSpin is how long the pool's idle workers poll for work under
// layer streaming. On a 2-vCPU machine, decoding tinyllama q4_0 streamed
// used 30% less CPU time per token with 50µs than with the default
// millisecond (one sequence: 123-127 against 171-176 ms; 4 batched: 48-59
// against 67 ms), and less wall time.
const streamSpin = 50 * time.Microsecond

// acquire marks a computation on the model's weights as in flight, or
// returns ErrClosed; release ends it.
func (m *Model) acquire() error {
	m.use.RLock()
	if m.closed.Load() {
		m.use.RUnlock()
		return ErrClosed
	}
	return nil
}

func (m *Model) release() { m.use.RUnlock() }

// PlanFile computes the memory plan Load would follow for the file at
// path under cfg, reading only its metadata.
func PlanFile(path string, cfg Config) (*plan.Plan, error) {
	cfg.clampThreads()
	return load.Plan(path, cfg.loadOptions())
}

// MemoryLimit returns the Go memory limit (runtime/debug.SetMemoryLimit)
// that keeps the process's heap within what Config.RAMBudget leaves once
// the streaming buffers are counted, or 0 when the model is resident or
// has no budget. Load does not set it: the collector's settings belong to
// the program, which may apply this value when QSF is all it runs (the
// qsf command does).
func (m *Model) MemoryLimit() int64 { return m.memLimit }

// Plan returns the memory plan the model was loaded with.
func (m *Model) Plan() *plan.Plan { return m.plan }

// Streaming reports whether the model streams its layers from the file.
func (m *Model) Streaming() bool { return m.layout != nil }

// Close releases the model: its worker threads, its repacked weights and
// its file. It is safe to call while sessions generate, from any
// goroutine: their computations stop at the next token with ErrClosed,
// Close waits for them, and every later call on the model or its sessions
// returns ErrClosed (Session.Close still releases a session's buffers).
// Close is idempotent.
func (m *Model) Close() error {
	if m.closed.Swap(true) {
		return nil
	}
	m.use.Lock()
	defer m.use.Unlock()
	m.pool.Close()
	if m.experts != nil {
		m.experts.close()
	}
	if m.layers != nil {
		m.layers.close()
	}
	return m.loaded.Close()
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
		Kernel: m.tier.Name(),
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

// defaultThreads is one thread per physical core.
func defaultThreads() int {
	if n := cpuid.CPU.PhysicalCores; n > 0 {
		return min(n, runtime.NumCPU())
	}
	return runtime.NumCPU()
}
