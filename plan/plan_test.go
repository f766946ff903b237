package plan

import (
	"errors"
	"strings"
	"testing"

	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/internal/testfiles"
	"github.com/qsf-llm/qsf/kvcache"
	"github.com/qsf-llm/qsf/model"
	"github.com/qsf-llm/qsf/stream"
)

type input struct {
	f   *format.File
	hp  model.Hparams
	lay *stream.Layout
}

func open(t *testing.T) *input {
	t.Helper()
	f, err := format.OpenWith(testfiles.Path(t, "models", "gguf", "stories260K-f32.gguf"), format.OpenOptions{NoMmap: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	embd, ok := f.Tensor("token_embd.weight")
	if !ok {
		t.Fatal("no token_embd.weight")
	}
	hp, err := model.ParseHparams(&f.Metadata, embd.Rows())
	if err != nil {
		t.Fatal(err)
	}
	lay, err := stream.NewLayout(f, &hp)
	if err != nil {
		t.Fatal(err)
	}
	return &input{f, hp, lay}
}

func (in *input) compute(t *testing.T, req Request) (*Plan, error) {
	t.Helper()
	p, err := Compute(in.f, &in.hp, in.lay, req)
	if err == nil {
		var sum int64
		for _, r := range p.Regions {
			sum += r.Bytes
		}
		if sum != p.PeakBytes {
			t.Fatalf("regions add up to %d, peak %d", sum, p.PeakBytes)
		}
		if p.Budget > 0 && p.PeakBytes > p.Budget {
			t.Fatalf("peak %d over the budget %d", p.PeakBytes, p.Budget)
		}
	}
	return p, err
}

func TestModes(t *testing.T) {
	in := open(t)
	base := Request{Ctx: 1024, KV: kvcache.F32, Threads: 2}
	free, err := in.compute(t, base)
	if err != nil {
		t.Fatal(err)
	}
	floor := minimum(t, in, base)
	for _, tc := range []struct {
		name   string
		budget int64
		mode   string
	}{
		{"no budget", 0, Resident},
		{"ample", 1 << 40, Resident},
		{"exactly resident", free.PeakBytes, Resident},
		{"one byte short", free.PeakBytes - 1, Streaming},
		{"the minimum", floor, Streaming},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := base
			req.Budget = tc.budget
			p, err := in.compute(t, req)
			if err != nil {
				t.Fatal(err)
			}
			if p.Mode != tc.mode {
				t.Fatalf("mode %s, want %s", p.Mode, tc.mode)
			}
			if tc.mode == Streaming && (p.BytesPerToken <= 0 || p.ArenaBytes <= 0) {
				t.Errorf("streaming plan without bytes per token (%d) or arena (%d)", p.BytesPerToken, p.ArenaBytes)
			}
		})
	}
}

// minimum returns the smallest budget that works for req, from the
// ErrBudget of a hopeless one.
func minimum(t *testing.T, in *input, req Request) int64 {
	t.Helper()
	req.Budget = 1
	_, err := in.compute(t, req)
	var be *BudgetError
	if !errors.As(err, &be) || !errors.Is(err, ErrBudget) {
		t.Fatalf("budget of 1 byte: %v, want a BudgetError", err)
	}
	if !strings.Contains(err.Error(), FormatBytes(be.Min)) {
		t.Errorf("error %q does not state the minimum %s", err, FormatBytes(be.Min))
	}
	return be.Min
}

func TestErrBudgetMinimum(t *testing.T) {
	in := open(t)
	for _, req := range []Request{
		{Ctx: 1024, Threads: 1},
		{Ctx: 1024, CtxFixed: true, Threads: 1},
		{Ctx: 1024, KV: kvcache.F16, KVFixed: true, Threads: 4},
		{Ctx: 64, CtxFixed: true, KV: kvcache.F32, KVFixed: true, Threads: 1, NoPrefetch: true},
	} {
		floor := minimum(t, in, req)
		req.Budget = floor
		if _, err := in.compute(t, req); err != nil {
			t.Errorf("%+v: the stated minimum fails: %v", req, err)
		}
		req.Budget = floor - 1
		if _, err := in.compute(t, req); !errors.Is(err, ErrBudget) {
			t.Errorf("%+v: one byte below the minimum: %v, want ErrBudget", req, err)
		}
		// A plan found early (with room to spare) states the same minimum.
		req.Budget = floor + floor/2
		if p, err := in.compute(t, req); err == nil && p.Mode == Streaming && p.MinBudgetBytes != floor {
			t.Errorf("%+v: plan with budget %d states minimum %d, the error %d", req, req.Budget, p.MinBudgetBytes, floor)
		}
	}
}

// TestDegradation sweeps budgets from the minimum to the resident peak and
// checks what each plan gives up: never an explicit context or KV type,
// never a longer context or more KV bits than asked, and the first thing
// given up is the first allowed step of the order context, KV bits,
// embedding rows, ring size.
func TestDegradation(t *testing.T) {
	in := open(t)
	for _, tc := range []struct {
		name  string
		req   Request
		first string // prefix of Degraded[0] at the minimum budget
	}{
		{"free", Request{Ctx: 4096, KV: kvcache.F32, Threads: 1}, "context"},
		{"fixed ctx", Request{Ctx: 4096, CtxFixed: true, KV: kvcache.F32, Threads: 1}, "kv"},
		{"fixed ctx and kv", Request{Ctx: 4096, CtxFixed: true, KV: kvcache.F32, KVFixed: true, Threads: 1}, "embedding rows"},
		{"fixed kv", Request{Ctx: 4096, KV: kvcache.Q8, KVFixed: true, Threads: 1}, "context"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			floor := minimum(t, in, tc.req)
			free, err := in.compute(t, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			prev := (*Plan)(nil)
			for i := range 41 {
				req := tc.req
				req.Budget = floor + (free.PeakBytes-floor)*int64(i)/40
				p, err := in.compute(t, req)
				if err != nil {
					t.Fatalf("budget %d: %v", req.Budget, err)
				}
				if p.Ctx > req.Ctx || (req.CtxFixed && p.Ctx != req.Ctx) {
					t.Fatalf("budget %d: context %d for a request of %d (fixed %v)", req.Budget, p.Ctx, req.Ctx, req.CtxFixed)
				}
				if p.KV() < req.KV || (req.KVFixed && p.KV() != req.KV) {
					t.Fatalf("budget %d: kv %v for a request of %v (fixed %v)", req.Budget, p.KV(), req.KV, req.KVFixed)
				}
				if i == 0 && (len(p.Degraded) == 0 || !strings.HasPrefix(p.Degraded[0], tc.first)) {
					t.Fatalf("at the minimum: degraded %q, want %q first", p.Degraded, tc.first)
				}
				// More memory never yields a worse plan in the order of
				// what is given up last: ring size, embedding rows, KV bits,
				// context.
				if prev != nil && p.Mode == Streaming && rank(p).less(rank(prev)) {
					t.Fatalf("budget %d: %+v, worse than %+v with a smaller budget", req.Budget, rank(p), rank(prev))
				}
				prev = p
			}
			if prev.Mode != Resident || len(prev.Degraded) != 0 {
				t.Errorf("at the resident peak: mode %s, degraded %q", prev.Mode, prev.Degraded)
			}
		})
	}
}

func TestBadRequest(t *testing.T) {
	in := open(t)
	if _, err := in.compute(t, Request{Ctx: 0}); err == nil {
		t.Error("context 0 accepted")
	}
}

// ranking is what a streaming plan keeps, most valued first.
type ranking struct {
	ring   int64
	rows   int
	kvBits int
	ctx    int
}

func rank(p *Plan) ranking {
	return ranking{p.RingBytes, p.EmbedRows, -int(p.KV()), p.Ctx}
}

func (a ranking) less(b ranking) bool {
	switch {
	case a.ring != b.ring:
		return a.ring < b.ring
	case a.rows != b.rows:
		return a.rows < b.rows
	case a.kvBits != b.kvBits:
		return a.kvBits < b.kvBits
	}
	return a.ctx < b.ctx
}

// TestSessions checks that a plan for several sessions counts each one's
// KV cache and activations (and their batch buffers) and the streaming
// buffers once: at the smallest budget of one session, four do not fit,
// and their smallest budget exceeds it by three sessions' KV caches and
// activations and the batch buffers.
func TestSessions(t *testing.T) {
	in := open(t)
	req := Request{Ctx: 256, CtxFixed: true, KV: kvcache.Q8, KVFixed: true, Threads: 1}
	one := minimum(t, in, req)
	four := req
	four.Sessions = 4
	four.Budget = one
	if _, err := in.compute(t, four); !errors.Is(err, ErrBudget) {
		t.Fatalf("4 sessions at the smallest budget of one: %v, want ErrBudget", err)
	}
	least := minimum(t, in, four)
	four.Budget = least
	p, err := in.compute(t, four)
	if err != nil {
		t.Fatal(err)
	}
	if p.Mode != Streaming || p.Sessions != 4 {
		t.Fatalf("mode %s, %d sessions; want streaming, 4", p.Mode, p.Sessions)
	}
	kv := kvcache.Bytes(kvcache.Shape{Layers: in.hp.Layers, Capacity: 256, KVHeads: in.hp.KVHeads, HeadDimK: in.hp.HeadDimK, HeadDimV: in.hp.HeadDimV}, kvcache.Q8)
	extra := 3*(kv+model.StateBytes(&in.hp, 256)) + model.BatchBytes(&in.hp)
	// The safety margin is a fraction of the sum (at least MarginMin).
	if d := least - one; d < extra || d > extra+extra/20+MarginMin {
		t.Errorf("4 sessions need %d bytes more than one, want about %d", d, extra)
	}
}
