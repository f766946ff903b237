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
	"cmp"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/cpuid/v2"
	"github.com/qsf-llm/qsf/arena"
	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/grammar"
	"github.com/qsf-llm/qsf/kernels"
	"github.com/qsf-llm/qsf/kvcache"
	"github.com/qsf-llm/qsf/model"
	"github.com/qsf-llm/qsf/plan"
	"github.com/qsf-llm/qsf/quant"
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
	ErrUnsupported = errors.New("qsf: unsupported model")
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

	memLimit int64 // suggested Go memory limit in streaming mode, or 0

	packed  *arena.Arena     // the weights repacked at load (resident mode), or nil
	plan    *plan.Plan       // the memory plan
	layout  *stream.Layout   // non-nil in streaming mode
	experts *expertStreaming // non-nil in expert streaming mode
	kv      kvcache.Options

	vocabOnce sync.Once
	vocab     *grammar.Vocab // the tokens for grammar filtering, built on first use
}

// Load opens a model file and prepares it for inference. The weights are
// memory-mapped (read into memory with Config.NoMmap), except that Q4_0 and
// Q8_0 matrices are repacked into process memory unless Config.NoRepack is
// set; under Config.RAMBudget the plan decides (see package plan). Load
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
	m, err := load(path, cfg)
	if err != nil {
		return nil, err
	}
	threads := cmp.Or(max(cfg.Threads, 0), defaultThreads())
	m.tier = tier
	m.pool = kernels.NewPoolTier(tier, threads)
	// A Model dropped without Close still stops its workers.
	runtime.AddCleanup(m, func(p *kernels.Pool) { p.Close() }, m.pool)
	cfg.logger().Debug("loaded", "path", path, "mode", m.plan.Mode, "context", m.ctx, "kv", m.kv.Type.String(),
		"threads", threads, "kernel", tier.Name(), "repacked", m.packed != nil, "elapsed", time.Since(start))
	return m, nil
}

// load opens the file and prepares the weights: resident, or as the plan
// for Config.RAMBudget says.
func load(path string, cfg Config) (*Model, error) {
	if cfg.RAMBudget > 0 {
		return loadBudget(path, cfg)
	}
	return loadResident(path, cfg)
}

// loadResident loads a model whose weights stay mapped (or in memory).
func loadResident(path string, cfg Config) (*Model, error) {
	f, err := format.OpenWith(path, format.OpenOptions{NoMmap: cfg.NoMmap})
	if err != nil {
		return nil, fmt.Errorf("qsf: load %s: %w", path, err)
	}
	m, err := newModel(f, cfg, nil)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("qsf: load %s: %w", path, err)
	}
	return m, nil
}

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

// hparams reads a model's hyperparameters from f's metadata.
func hparams(f *format.File) (model.Hparams, error) {
	md := &f.Metadata
	arch, _ := md.String("general.architecture")
	if !model.Supported(arch) {
		return model.Hparams{}, fmt.Errorf("%w: architecture %q", ErrUnsupported, arch)
	}
	embd, ok := f.Tensor("token_embd.weight")
	if !ok {
		return model.Hparams{}, fmt.Errorf("%w: token_embd.weight", model.ErrMissingTensor)
	}
	return model.ParseHparams(md, embd.Rows())
}

// newModel prepares a resident model; p is the memory plan when there is a
// budget.
func newModel(f *format.File, cfg Config, p *plan.Plan) (*Model, error) {
	hp, err := hparams(f)
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
		if ti.Type == quant.I2_S {
			t, err := i2sTensor(f, ti, data)
			return t, err == nil, err
		}
		return model.Tensor{Name: name, Type: ti.Type, Rows: ti.Rows(), Cols: ti.Cols(), Data: data}, true, nil
	})
	if err != nil {
		if errors.Is(err, quant.ErrUnsupported) {
			return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
		}
		return nil, err
	}
	tok, err := tokenizer.FromGGUF(&f.Metadata)
	if err != nil {
		return nil, err
	}
	var packed *arena.Arena
	if !cfg.NoRepack {
		// Streamed experts are read from the file as they are needed:
		// repacking them would read them all.
		streamed := p != nil && p.Mode == plan.Experts
		if packed, err = repackWeights(weights, f, !streamed, cfg.LoadProgress); err != nil {
			return nil, err
		}
	}
	m := &Model{cfg: cfg, file: f, net: &model.Model{Hparams: hp, Weights: weights}, tok: tok, plan: p, packed: packed}
	if err := m.setKV(p); err != nil {
		if packed != nil {
			packed.Close()
		}
		return nil, err
	}
	return m, nil
}

// wantCtx is the context a config asks for.
func wantCtx(cfg Config, hp *model.Hparams) int {
	ctx := cfg.ContextLength
	if ctx <= 0 {
		ctx = min(hp.CtxLen, DefaultContextLength)
	}
	return ctx
}

// setKV sets the context length and KV cache options from the config and
// the plan (nil without a budget).
func (m *Model) setKV(p *plan.Plan) error {
	hp := &m.net.Hparams
	cfg := m.cfg
	m.ctx = wantCtx(cfg, hp)
	typ, err := kvcache.ParseType(cfg.KVType)
	if err != nil {
		return err
	}
	if p != nil {
		m.warnDegraded(p, typ)
		m.ctx, typ = p.Ctx, p.KV()
	}
	if hp.LearnedPos && m.net.PosEmbd.Rows > 0 && m.ctx > m.net.PosEmbd.Rows {
		if cfg.ContextLength > 0 {
			cfg.logger().Warn(fmt.Sprintf("context %d is longer than the model's %d learned positions: using %d", m.ctx, m.net.PosEmbd.Rows, m.net.PosEmbd.Rows))
		}
		m.ctx = m.net.PosEmbd.Rows
	} else if hp.CtxLen > 0 && m.ctx > hp.CtxLen {
		cfg.logger().Warn(fmt.Sprintf("context %d is longer than the %d tokens the model was trained on: output past %d tokens may be poor", m.ctx, hp.CtxLen, hp.CtxLen))
	}
	m.kv = kvcache.Options{Type: typ}
	switch cfg.KVEviction {
	case "", "none":
	case "window":
		m.kv.Policy = kvcache.Window{}
	case "h2o", "heavy-hitter":
		recent := cfg.KVRecent
		if recent <= 0 {
			recent = m.ctx / 2
		}
		m.kv.Policy = kvcache.HeavyHitter{Recent: recent}
	default:
		return fmt.Errorf("qsf: unknown KV eviction %q (want window or h2o)", cfg.KVEviction)
	}
	if p == nil {
		threads := cfg.Threads
		if threads <= 0 {
			threads = defaultThreads()
		}
		m.plan, _ = plan.Compute(m.file, hp, nil, plan.Request{Ctx: m.ctx, KV: typ, Threads: threads})
	}
	return nil
}

// warnDegraded logs one warning when the plan p shortened the context or
// lowered the KV cache type the config asked for (kv) to fit the budget.
func (m *Model) warnDegraded(p *plan.Plan, kv kvcache.Type) {
	var changes []string
	if want := wantCtx(m.cfg, &m.net.Hparams); p.Ctx < want {
		changes = append(changes, fmt.Sprintf("context %d tokens (instead of %d)", p.Ctx, want))
	}
	if p.KV() != kv {
		changes = append(changes, fmt.Sprintf("KV cache %s (instead of %s)", p.KV(), kv))
	}
	if len(changes) > 0 {
		m.cfg.logger().Warn(fmt.Sprintf("to fit the RAM budget of %s: %s; set the context length or KV type to choose",
			plan.FormatBytes(m.cfg.RAMBudget), strings.Join(changes, ", ")))
	}
}

// loadBudget plans the memory of a model from its metadata, then loads it
// resident or streaming as the plan says.
func loadBudget(path string, cfg Config) (*Model, error) {
	f, err := format.OpenWith(path, format.OpenOptions{NoMmap: true})
	if err != nil {
		return nil, fmt.Errorf("qsf: load %s: %w", path, err)
	}
	m, err := newBudgetModel(f, path, cfg)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("qsf: load %s: %w", path, err)
	}
	return m, nil
}

// PlanFile computes the memory plan Load would follow for the file at
// path under cfg, reading only its metadata.
func PlanFile(path string, cfg Config) (*plan.Plan, error) {
	cfg.clampThreads()
	f, err := format.OpenWith(path, format.OpenOptions{NoMmap: true})
	if err != nil {
		return nil, err
	}
	defer f.Close()
	hp, err := hparams(f)
	if err != nil {
		return nil, err
	}
	if err := noI2SExperts(f, &hp); err != nil {
		return nil, err
	}
	lay, err := streamLayout(f, &hp)
	if err != nil {
		return nil, err
	}
	return computePlan(f, &hp, lay, cfg)
}

// streamLayout is the layer-streaming layout of f, or nil for a mixture
// of experts, which streams its experts instead (plan.Experts).
func streamLayout(f *format.File, hp *model.Hparams) (*stream.Layout, error) {
	if hp.MoE.Experts > 0 {
		return nil, nil
	}
	return stream.NewLayout(f, hp)
}

func computePlan(f *format.File, hp *model.Hparams, lay *stream.Layout, cfg Config) (*plan.Plan, error) {
	typ, err := kvcache.ParseType(cfg.KVType)
	if err != nil {
		return nil, err
	}
	threads := cfg.Threads
	if threads <= 0 {
		threads = defaultThreads()
	}
	return plan.Compute(f, hp, lay, plan.Request{Budget: cfg.RAMBudget, Ctx: wantCtx(cfg, hp), CtxFixed: cfg.ContextLength > 0,
		KV: typ, KVFixed: cfg.KVType != "", Threads: threads, NoPrefetch: cfg.NoPrefetch})
}

func newBudgetModel(f *format.File, path string, cfg Config) (*Model, error) {
	hp, err := hparams(f)
	if err != nil {
		return nil, err
	}
	if err := noI2SExperts(f, &hp); err != nil {
		return nil, err
	}
	lay, err := streamLayout(f, &hp)
	if err != nil {
		return nil, err
	}
	p, err := computePlan(f, &hp, lay, cfg)
	if err != nil {
		return nil, err
	}
	if p.Mode == plan.Experts {
		return newExpertModel(f, path, cfg, p)
	}
	if p.Mode == plan.Resident {
		return reopenResident(f, path, cfg, p)
	}
	tok, err := tokenizer.FromGGUF(&f.Metadata)
	if err != nil {
		return nil, err
	}
	m := &Model{cfg: cfg, file: f, net: &model.Model{Hparams: hp, Weights: lay.Weights}, tok: tok, plan: p, layout: lay}
	if err := m.setKV(p); err != nil {
		return nil, err
	}
	// The Go heap (tokenizer, metadata) is all that is left outside the
	// arena: the collector should stay within the budget's remainder.
	if limit := cfg.RAMBudget - p.ArenaBytes - plan.RuntimeBytes/2; limit > 0 {
		m.memLimit = max(limit, 8<<20)
	}
	return m, nil
}

// reopenResident closes f, which was opened to read metadata only, and
// loads the model from path mapped (or read, with Config.NoMmap) as the
// plan p says.
func reopenResident(f *format.File, path string, cfg Config, p *plan.Plan) (*Model, error) {
	f.Close()
	rf, err := format.OpenWith(path, format.OpenOptions{NoMmap: cfg.NoMmap})
	if err != nil {
		return nil, err
	}
	m, err := newModel(rf, cfg, p)
	if err != nil {
		rf.Close()
		return nil, err
	}
	return m, nil
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
	if m.packed != nil {
		m.packed.Close()
	}
	if m.experts != nil {
		m.experts.close()
	}
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

func defaultThreads() int {
	if n := cpuid.CPU.PhysicalCores; n > 0 {
		return min(n, runtime.NumCPU())
	}
	return runtime.NumCPU()
}
