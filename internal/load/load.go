// Package load opens a model file and prepares it for inference, the one
// place where loading happens: it reads the hyperparameters and tokenizer,
// plans the memory (package plan), and then maps and repacks the weights
// (resident), lays out the layers for streaming (package stream), or maps
// all but the routed experts and lays those out (expert streaming). The
// qsf package's Model wraps the result.
package load

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/qsf-llm/qsf/arena"
	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/kernels"
	"github.com/qsf-llm/qsf/kvcache"
	"github.com/qsf-llm/qsf/model"
	"github.com/qsf-llm/qsf/plan"
	"github.com/qsf-llm/qsf/quant"
	"github.com/qsf-llm/qsf/stream"
	"github.com/qsf-llm/qsf/tokenizer"
)

// ErrUnsupported is returned for a model that cannot run (architecture,
// tensor type); the message names what is unsupported.
var ErrUnsupported = errors.New("qsf: unsupported model")

// Options are the settings loading reads (qsf.Config's, resolved: Threads
// is at least 1 and Logger is not nil).
type Options struct {
	Threads        int // the threads a session computes with (the plan counts their buffers)
	ContextLength  int // 0: the model's trained context, capped at DefaultContext
	DefaultContext int
	NoMmap         bool
	NoRepack       bool
	RAMBudget      int64
	KVType         string
	KVEviction     string
	KVRecent       int
	NoPrefetch     bool
	Sessions       int // sessions the budget holds at once (0: one)
	Logger         *slog.Logger
	Progress       func(done, total int64) // repacking progress, or nil
	Tier           *kernels.Tier           // the tier the model runs on (its repacked layouts); nil: kernels.DefaultTier
}

// Model is a loaded model: the file, the network, the tokenizer and how
// its sessions are to run.
type Model struct {
	File *format.File
	Net  *model.Model
	Tok  *tokenizer.Tokenizer
	Ctx  int             // positions per session
	KV   kvcache.Options // the sessions' KV cache
	Plan *plan.Plan      // the memory plan

	Packed  *arena.Arena         // the weights repacked at load, or nil
	Layout  *stream.Layout       // layer streaming: where the layers lie, or nil
	Experts *stream.ExpertLayout // expert streaming: where the experts lie, or nil

	// MemoryLimit is the Go memory limit that keeps the heap within what
	// the budget leaves in layer-streaming mode, or 0.
	MemoryLimit int64
}

// Close releases the repacked weights and the file. Nothing may use the
// weights afterwards.
func (m *Model) Close() error {
	if m.Packed != nil {
		m.Packed.Close()
	}
	return m.File.Close()
}

// request is what the options ask of a given model, resolved once.
type request struct {
	Options
	hp  model.Hparams
	ctx int          // the context asked for (before the plan and the position table)
	kv  kvcache.Type // the KV cache type asked for
}

// Open loads the model file at path: mapped (read with NoMmap) and
// repacked unless NoRepack, or under a RAMBudget as the memory plan says.
func Open(path string, o Options) (*Model, error) {
	// Without a budget the weights are mapped at once; with one the
	// metadata is read first and the file mapped only if the plan keeps
	// the weights resident.
	f, err := format.OpenWith(path, format.OpenOptions{NoMmap: o.NoMmap || o.RAMBudget > 0})
	if err != nil {
		return nil, fmt.Errorf("qsf: load %s: %w", path, err)
	}
	m, err := open(f, o)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("qsf: load %s: %w", path, err)
	}
	return m, nil
}

// Plan computes the memory plan Open would follow for the file at path,
// reading only its metadata.
func Plan(path string, o Options) (*plan.Plan, error) {
	f, err := format.OpenWith(path, format.OpenOptions{NoMmap: true})
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := newRequest(f, o)
	if err != nil {
		return nil, err
	}
	p, _, err := r.plan(f)
	return p, err
}

func open(f *format.File, o Options) (*Model, error) {
	r, err := newRequest(f, o)
	if err != nil {
		return nil, err
	}
	if o.RAMBudget <= 0 {
		return r.resident(f, nil)
	}
	p, lay, err := r.plan(f)
	if err != nil {
		return nil, err
	}
	switch p.Mode {
	case plan.Experts:
		el, err := stream.NewExpertLayout(f, &r.hp)
		if err != nil {
			return nil, err
		}
		r.mapFile(f)
		m, err := r.resident(f, p)
		if err != nil {
			return nil, err
		}
		m.Experts = el
		return m, nil
	case plan.Resident:
		r.mapFile(f)
		return r.resident(f, p)
	}
	return r.streaming(f, p, lay)
}

// newRequest reads f's hyperparameters and resolves the options for them.
func newRequest(f *format.File, o Options) (*request, error) {
	r := &request{Options: o}
	var err error
	if r.hp, err = hparams(f); err != nil {
		return nil, err
	}
	if r.kv, err = kvcache.ParseType(o.KVType); err != nil {
		return nil, err
	}
	r.ctx = o.ContextLength
	if r.ctx <= 0 {
		r.ctx = min(r.hp.CtxLen, o.DefaultContext)
	}
	return r, nil
}

// mapFile maps f, opened without a mapping to read its metadata, unless
// the options say not to; where it cannot be mapped it is read instead.
func (r *request) mapFile(f *format.File) {
	if !r.NoMmap {
		_ = f.Map()
	}
}

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

// plan computes the memory plan under the budget, with the layer-streaming
// layout it is computed for (nil for a mixture of experts, which streams
// its experts instead: plan.Experts).
func (r *request) plan(f *format.File) (*plan.Plan, *stream.Layout, error) {
	if err := noI2SExperts(f, &r.hp); err != nil {
		return nil, nil, err
	}
	var lay *stream.Layout
	if r.hp.MoE.Experts == 0 {
		var err error
		if lay, err = stream.NewLayout(f, &r.hp); err != nil {
			return nil, nil, err
		}
	}
	p, err := plan.Compute(f, &r.hp, lay, plan.Request{Budget: r.RAMBudget, Ctx: r.ctx, CtxFixed: r.ContextLength > 0,
		KV: r.kv, KVFixed: r.KVType != "", Threads: r.Threads, NoPrefetch: r.NoPrefetch, Sessions: r.Sessions})
	return p, lay, err
}

// resident prepares a model whose weights stay mapped (or in memory),
// repacked unless the options say not to; p is the memory plan when there
// is a budget.
func (r *request) resident(f *format.File, p *plan.Plan) (*Model, error) {
	weights, err := model.LoadWeights(&r.hp, tensorLookup(f))
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
	if !r.NoRepack {
		// Streamed experts are read from the file as they are needed:
		// repacking them would read them all.
		streamed := p != nil && p.Mode == plan.Experts
		// Huge pages speed up reading the repacked weights, but a
		// partly touched one counts whole: not under a RAM budget.
		tier := r.Tier
		if tier == nil {
			tier = kernels.DefaultTier()
		}
		if packed, err = repackWeights(weights, f, tier, !streamed, r.RAMBudget <= 0, r.Progress); err != nil {
			return nil, err
		}
	}
	m := &Model{File: f, Net: &model.Model{Hparams: r.hp, Weights: weights}, Tok: tok, Plan: p, Packed: packed}
	if err := r.setKV(m, p); err != nil {
		if packed != nil {
			packed.Close()
		}
		return nil, err
	}
	return m, nil
}

// tensorLookup finds the weights model.LoadWeights asks for in f: the
// file's bytes (mapped, or read into memory), I2_S matrices converted.
func tensorLookup(f *format.File) func(name string) (model.Tensor, bool, error) {
	return func(name string) (model.Tensor, bool, error) {
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
	}
}

// streaming prepares a model whose layers are streamed from f through lay
// as the plan p says.
func (r *request) streaming(f *format.File, p *plan.Plan, lay *stream.Layout) (*Model, error) {
	tok, err := tokenizer.FromGGUF(&f.Metadata)
	if err != nil {
		return nil, err
	}
	m := &Model{File: f, Net: &model.Model{Hparams: r.hp, Weights: lay.Weights}, Tok: tok, Plan: p, Layout: lay}
	if err := r.setKV(m, p); err != nil {
		return nil, err
	}
	// The Go heap (tokenizer, metadata) is all that is left outside the
	// arena: the collector should stay within the budget's remainder.
	if limit := r.RAMBudget - p.ArenaBytes - plan.RuntimeBytes/2; limit > 0 {
		m.MemoryLimit = max(limit, 8<<20)
	}
	return m, nil
}

// setKV sets m's context length and KV cache options from the request and
// the plan p (nil without a budget, in which case it computes the plan of
// the resident model).
func (r *request) setKV(m *Model, p *plan.Plan) error {
	hp := &m.Net.Hparams
	m.Ctx = r.ctx
	typ := r.kv
	if p != nil {
		r.warnDegraded(p)
		m.Ctx, typ = p.Ctx, p.KV()
	}
	if hp.LearnedPos && m.Net.PosEmbd.Rows > 0 && m.Ctx > m.Net.PosEmbd.Rows {
		if r.ContextLength > 0 {
			r.Logger.Warn(fmt.Sprintf("context %d is longer than the model's %d learned positions: using %d", m.Ctx, m.Net.PosEmbd.Rows, m.Net.PosEmbd.Rows))
		}
		m.Ctx = m.Net.PosEmbd.Rows
	} else if hp.CtxLen > 0 && m.Ctx > hp.CtxLen {
		r.Logger.Warn(fmt.Sprintf("context %d is longer than the %d tokens the model was trained on: output past %d tokens may be poor", m.Ctx, hp.CtxLen, hp.CtxLen))
	}
	m.KV = kvcache.Options{Type: typ}
	switch r.KVEviction {
	case "", "none":
	case "window":
		m.KV.Policy = kvcache.Window{}
	case "h2o", "heavy-hitter":
		recent := r.KVRecent
		if recent <= 0 {
			recent = m.Ctx / 2
		}
		m.KV.Policy = kvcache.HeavyHitter{Recent: recent}
	default:
		return fmt.Errorf("qsf: unknown KV eviction %q (want window or h2o)", r.KVEviction)
	}
	if p == nil {
		m.Plan, _ = plan.Compute(m.File, hp, nil, plan.Request{Ctx: m.Ctx, KV: typ, Threads: r.Threads})
	}
	return nil
}

// warnDegraded logs one warning when the plan p shortened the context or
// lowered the KV cache type asked for to fit the budget.
func (r *request) warnDegraded(p *plan.Plan) {
	var changes []string
	if p.Ctx < r.ctx {
		changes = append(changes, fmt.Sprintf("context %d tokens (instead of %d)", p.Ctx, r.ctx))
	}
	if p.KV() != r.kv {
		changes = append(changes, fmt.Sprintf("KV cache %s (instead of %s)", p.KV(), r.kv))
	}
	if len(changes) > 0 {
		r.Logger.Warn(fmt.Sprintf("to fit the RAM budget of %s: %s; set the context length or KV type to choose",
			plan.FormatBytes(r.RAMBudget), strings.Join(changes, ", ")))
	}
}
