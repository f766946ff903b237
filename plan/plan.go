// Package plan computes, from a model file's metadata alone, how a model
// will use memory under a RAM budget: every region (layer buffers, KV
// cache, activations, runtime overheads, ...), whether the weights can stay
// resident or must be streamed, and what to give up when the budget is
// short. It runs before anything large is allocated.
package plan

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/kvcache"
	"github.com/qsf-llm/qsf/model"
	"github.com/qsf-llm/qsf/quant"
	"github.com/qsf-llm/qsf/stream"
)

// ErrBudget is returned when no configuration fits the RAM budget; the
// message states the smallest budget that would work.
var ErrBudget = errors.New("plan: RAM budget too small")

// BudgetError is the error Compute returns when no configuration fits:
// it matches ErrBudget and carries the smallest budget that works.
type BudgetError struct {
	Budget int64        // the budget asked for
	Min    int64        // the smallest budget that works
	Ctx    int          // the context of the smallest configuration
	KV     kvcache.Type // its KV cache type
	// Experts says the minimum is that of expert streaming: everything
	// but the routed experts resident and the smallest expert cache.
	Experts bool
}

// Error states the smallest budget that works and the configuration it
// buys, beside the budget given.
func (e *BudgetError) Error() string {
	smallest := "smallest ring"
	if e.Experts {
		smallest = "all but the routed experts resident, smallest expert cache"
	}
	return fmt.Sprintf("%v: %s needed at least (context %d, kv %s, %s), budget %s", ErrBudget,
		FormatBytes(e.Min), e.Ctx, e.KV, smallest, FormatBytes(e.Budget))
}

// Is reports whether target is ErrBudget.
func (e *BudgetError) Is(target error) bool { return target == ErrBudget }

// Modes.
const (
	Resident  = "resident"  // weights memory-mapped, as without a budget
	Streaming = "streaming" // layers read through a ring buffer as needed
	// Experts is expert streaming (mixtures of experts): everything but
	// the routed experts memory-mapped, the experts a token selects read
	// into an expert cache.
	Experts = "experts"
)

// Fixed overheads, calibrated against /usr/bin/time -v on linux/amd64
// (see the package tests): the binary and Go runtime, the heap per byte of
// file metadata (tokenizer tables, maps), each thread's stack and a safety
// margin. RuntimeBytes is what the qsf binary keeps resident besides the
// planned buffers: its code (7.9 MiB of its 14.9 MB file), the C library
// and loader a default (cgo-enabled) build links for package net (1.5
// MiB), and the Go runtime's own structures. It was 6 MiB, and tinyllama
// at its smallest budget (27.5 MiB) peaked at 30.9 MiB with its pieces
// copied.
const (
	RuntimeBytes     = 10 << 20
	MetadataFactor   = 4
	ThreadStackBytes = 256 << 10
	MarginFraction   = 0.02
	MarginMin        = 1 << 20
	DefaultEmbedRows = 256
	ringStep         = 64 << 10 // the precision of the ring size search
	MinEmbedRows     = 16
	MinCtx           = 256 // the context is not shortened below this (or the request)
)

// Request is what the caller asks for.
type Request struct {
	Budget     int64 // bytes; 0 means no budget (resident)
	Ctx        int   // positions wanted
	CtxFixed   bool  // the context was set explicitly: do not shorten it
	KV         kvcache.Type
	KVFixed    bool // the KV type was set explicitly: do not change it
	Threads    int
	NoPrefetch bool // use the smallest ring (the reader is at most a piece ahead)
	// Sessions is how many sessions the budget holds at once, each with
	// its KV cache and activations (and, with more than one, the batch
	// buffers of their passes together); 0 means one.
	Sessions int
}

// Region is one named use of memory.
type Region struct {
	Name  string `json:"name"`
	Bytes int64  `json:"bytes"`
}

// Plan is the outcome.
type Plan struct {
	Mode           string `json:"mode"`
	Budget         int64  `json:"budget_bytes"`
	PeakBytes      int64  `json:"peak_bytes"`
	MinBudgetBytes int64  `json:"min_budget_bytes"`
	Ctx            int    `json:"ctx"`
	KVType         string `json:"kv_type"`
	// RingBytes is the capacity of the ring the streamed matrices and LM
	// head chunks pass through (0 when resident); RingLayers is it in
	// layers: from about 1 the reader loads each matrix of the next layer
	// while the current one computes, 2 lets it work a whole layer ahead.
	RingBytes    int64    `json:"ring_bytes"`
	RingLayers   float64  `json:"ring_layers"`
	EmbedRows    int      `json:"embed_rows"`
	HeadResident bool     `json:"head_resident"`
	Degraded     []string `json:"degraded,omitempty"`
	// BytesPerToken is what one decoded token reads from the file when
	// streaming (0 when resident).
	BytesPerToken int64 `json:"bytes_per_token"`
	// ArenaBytes is the streaming engine's reservation: the buffers its
	// sessions share and, for each of the Sessions sessions, its
	// activations and KV cache.
	ArenaBytes int64 `json:"arena_bytes"`
	// Sessions is the number of sessions the plan holds at once.
	Sessions int      `json:"sessions"`
	Regions  []Region `json:"regions"`

	// ActiveParams is the number of weights one token uses: all of them
	// for a dense model, those of the experts it is routed to and the
	// rest for a mixture of experts.
	ActiveParams int64 `json:"active_params"`
	// ExpertSlots is the number of routed experts the expert cache holds
	// (mode experts), of ExpertsTotal, each ExpertBytes.
	ExpertSlots  int   `json:"expert_slots,omitempty"`
	ExpertsTotal int   `json:"experts_total,omitempty"`
	ExpertBytes  int64 `json:"expert_bytes,omitempty"`

	kv kvcache.Type
}

// KV returns the KV cache type chosen.
func (p *Plan) KV() kvcache.Type { return p.kv }

// config is one candidate.
type config struct {
	ctx          int
	kv           kvcache.Type
	embedRows    int
	ring         int64
	headResident bool
}

// Compute plans a model of hp in f (lay is its streaming layout) for req.
func Compute(f *format.File, hp *model.Hparams, lay *stream.Layout, req Request) (*Plan, error) {
	if req.Ctx <= 0 {
		return nil, fmt.Errorf("plan: context %d", req.Ctx)
	}
	threads := max(req.Threads, 1)
	sessions := max(req.Sessions, 1)
	var weights int64
	for _, t := range f.Tensors {
		weights += int64(t.Size)
	}
	meta := f.MetadataBytes()
	fixed := []Region{
		{"runtime and binary", RuntimeBytes},
		{"index and metadata", meta * MetadataFactor},
		{"thread stacks", int64(threads+4) * ThreadStackBytes},
	}
	kvBytes := func(c config) int64 {
		return kvcache.Bytes(kvcache.Shape{Layers: hp.Layers, Capacity: c.ctx, KVHeads: hp.KVHeads, HeadDimK: hp.HeadDimK, HeadDimV: hp.HeadDimV}, c.kv)
	}
	// Each session's KV cache and activations, as regions (named for all
	// the sessions) and as one session's arena; several sessions add the
	// batch buffers their passes together share.
	each := ""
	if sessions > 1 {
		each = fmt.Sprintf(" (%d sessions)", sessions)
	}
	perSession := func(c config, activations string) []Region {
		r := []Region{{"kv cache " + c.kv.String() + each, int64(sessions) * kvBytes(c)},
			{activations + each, int64(sessions) * model.StateBytes(hp, c.ctx)}}
		if sessions > 1 && hp.MoE.Experts == 0 {
			r = append(r, Region{"batch buffers", model.BatchBytes(hp)})
		}
		return r
	}
	sessionArena := func(c config) int64 { return int64(sessions) * (kvBytes(c) + model.StateBytes(hp, c.ctx) + 64*64) }
	norms := normBytes(f)
	// A resident model converts I2_S matrices at load into the heap and
	// hands their mapped pages back.
	var i2sFile, i2sOut int64
	if lay != nil {
		i2sFile, i2sOut = lay.I2SBytes()
	}
	resident := func(c config) *Plan {
		p := &Plan{Mode: Resident, Ctx: c.ctx, kv: c.kv, KVType: c.kv.String(), Sessions: sessions}
		p.Regions = append(p.Regions, Region{"weights (mapped)", weights - i2sFile})
		if i2sOut > 0 {
			p.Regions = append(p.Regions, Region{"I2_S weights (converted)", i2sOut})
		}
		p.Regions = append(p.Regions, Region{"norms", norms})
		p.Regions = append(p.Regions, perSession(c, "activations")...)
		p.Regions = append(p.Regions, fixed...)
		return p.finish()
	}
	streaming := func(c config) *Plan {
		opts := stream.Options{RingBytes: int(c.ring), EmbedRows: c.embedRows, HeadResident: c.headResident}
		ring := int64(opts.Ring(lay))
		p := &Plan{Mode: Streaming, Ctx: c.ctx, kv: c.kv, KVType: c.kv.String(), Sessions: sessions, RingBytes: ring,
			RingLayers: float64(ring) / float64(lay.LayerBytes()), EmbedRows: c.embedRows, HeadResident: c.headResident}
		head, _ := lay.HeadBytes()
		p.Regions = append(p.Regions,
			Region{"ring buffer", ring},
			Region{"decompression buffer", int64(lay.DecompressBytes())},
			Region{"embedding rows", int64(c.embedRows*lay.EmbeddingRowBytes()) + int64(hp.Vocab)*4},
			Region{"norms", norms},
		)
		p.Regions = append(p.Regions, perSession(c, "activations and scratch")...)
		if n := lay.ConvertBytes(); n > 0 {
			p.Regions = append(p.Regions, Region{"I2_S conversion buffer", int64(n)})
		}
		if c.headResident {
			p.Regions = append(p.Regions, Region{"lm head", head})
		}
		p.Regions = append(p.Regions, fixed...)
		p.ArenaBytes = stream.BufferBytes(lay, opts) + sessionArena(c)
		p.BytesPerToken = lay.LayerBytesTotal() + int64(lay.EmbeddingRowBytes())
		if !c.headResident {
			p.BytesPerToken += head
		}
		return p.finish()
	}

	active := activeParams(f, hp)
	want := config{ctx: req.Ctx, kv: req.KV, embedRows: DefaultEmbedRows, headResident: true}
	if req.Budget <= 0 {
		p := resident(want)
		p.ActiveParams = active
		return p, nil
	}
	if p := resident(want); p.PeakBytes <= req.Budget {
		p.Budget = req.Budget
		p.MinBudgetBytes = p.PeakBytes
		p.ActiveParams = active
		return p, nil
	}
	if hp.MoE.Experts > 0 {
		el, err := stream.NewExpertLayout(f, hp)
		if err != nil {
			return nil, err
		}
		p, err := computeExperts(req, want, el, func(c config) *Plan {
			p := &Plan{Mode: Experts, Ctx: c.ctx, kv: c.kv, KVType: c.kv.String(), Sessions: sessions}
			p.Regions = append(p.Regions, Region{"weights but the routed experts (mapped)", weights - el.TotalBytes}, Region{"norms", norms})
			p.Regions = append(p.Regions, perSession(c, "activations")...)
			p.Regions = append(p.Regions, Region{"prompt batch buffers", model.BatchBytes(hp)})
			p.Regions = append(p.Regions, fixed...)
			p.ArenaBytes = sessionArena(c)
			return p
		})
		if p != nil {
			p.ActiveParams = active
		}
		return p, err
	}
	if lay == nil {
		return nil, fmt.Errorf("plan: no streaming layout")
	}
	minRing := int64(lay.MinRingBytes())
	want.ring = 2 * int64(lay.LayerBytes())
	if req.NoPrefetch {
		want.ring = minRing
	}
	// Degrade step by step: context, KV bits, embedding cache, ring size;
	// at each step try the LM head resident, then streamed.
	var steps []string
	c := want
	try := func() *Plan {
		for _, head := range []bool{true, false} {
			c.headResident = head
			if p := streaming(c); p.PeakBytes <= req.Budget {
				return p
			}
		}
		return nil
	}
	found := try()
	for found == nil && !req.CtxFixed && c.ctx > min(MinCtx, req.Ctx) {
		c.ctx = max(c.ctx/2, min(MinCtx, req.Ctx))
		steps = append(steps, "context "+strconv.Itoa(c.ctx))
		found = try()
	}
	for found == nil && !req.KVFixed && c.kv < kvcache.Q4 {
		c.kv, _ = c.kv.Less()
		steps = append(steps, "kv "+c.kv.String())
		found = try()
	}
	for found == nil && c.embedRows > MinEmbedRows {
		c.embedRows = max(c.embedRows/4, MinEmbedRows)
		steps = append(steps, "embedding rows "+strconv.Itoa(c.embedRows))
		found = try()
	}
	if found == nil && c.ring > minRing {
		// The largest ring that fits, with the LM head streamed (a
		// resident head would leave a smaller ring).
		c.headResident = false
		lo, hi := minRing, c.ring
		if p := streaming(config{c.ctx, c.kv, c.embedRows, lo, false}); p.PeakBytes <= req.Budget {
			for hi-lo > ringStep {
				mid := (lo + hi) / 2
				if streaming(config{c.ctx, c.kv, c.embedRows, mid, false}).PeakBytes <= req.Budget {
					lo = mid
				} else {
					hi = mid
				}
			}
			c.ring = lo
			found = streaming(c)
		} else {
			c.ring = minRing
		}
		steps = append(steps, "ring")
	}
	// The smallest budget that works is the fully degraded configuration,
	// whichever step the search stopped at.
	least := config{ctx: req.Ctx, kv: req.KV, embedRows: MinEmbedRows, ring: minRing}
	if !req.CtxFixed {
		least.ctx = min(MinCtx, req.Ctx)
	}
	if !req.KVFixed {
		least.kv = max(least.kv, kvcache.Q4)
	}
	floor := streaming(least).PeakBytes
	if found == nil {
		return nil, &BudgetError{Budget: req.Budget, Min: floor, Ctx: c.ctx, KV: c.kv}
	}
	// Take back what the later steps made unnecessary, in the reverse
	// order (ring, embedding rows, KV bits, context), so the plan is the
	// best configuration in the order of what is given up last.
	c = config{ctx: found.Ctx, kv: found.kv, embedRows: found.EmbedRows, ring: found.RingBytes}
	improve := func(change func() bool) {
		for {
			prev := c
			if !change() {
				return
			}
			p := try()
			if p == nil {
				c = prev
				return
			}
			found = p
		}
	}
	improve(func() bool {
		if c.ring >= want.ring {
			return false
		}
		c.ring = want.ring
		return true
	})
	improve(func() bool {
		if c.embedRows >= want.embedRows {
			return false
		}
		c.embedRows = min(c.embedRows*4, want.embedRows)
		return true
	})
	improve(func() bool {
		if c.kv <= want.kv {
			return false
		}
		c.kv--
		return true
	})
	improve(func() bool {
		if c.ctx >= want.ctx {
			return false
		}
		c.ctx = min(c.ctx*2, want.ctx)
		return true
	})
	steps = steps[:0]
	if found.Ctx < want.ctx {
		steps = append(steps, "context "+strconv.Itoa(found.Ctx))
	}
	if found.kv != want.kv {
		steps = append(steps, "kv "+found.KVType)
	}
	if found.EmbedRows < want.embedRows {
		steps = append(steps, "embedding rows "+strconv.Itoa(found.EmbedRows))
	}
	if found.RingBytes < int64(stream.Options{RingBytes: int(want.ring)}.Ring(lay)) {
		steps = append(steps, fmt.Sprintf("ring %s (%.2f layers)", FormatBytes(found.RingBytes), found.RingLayers))
	}
	found.Budget = req.Budget
	found.MinBudgetBytes = floor
	found.Degraded = steps
	return found, nil
}

// computeExperts plans expert streaming: base(c) is the plan of
// everything but the expert cache for context and KV type c; the cache
// gets what the budget leaves, at least the experts one token uses per
// layer and at most all of them. The context and then the KV bits are
// given up only when even the smallest cache does not fit.
func computeExperts(req Request, want config, el *stream.ExpertLayout, base func(c config) *Plan) (*Plan, error) {
	total := el.Experts()
	minSlots := el.Hparams.MoE.Used
	build := func(c config, slots int) *Plan {
		p := base(c)
		p.ExpertSlots, p.ExpertsTotal, p.ExpertBytes = slots, total, int64(el.ExpertBytes)
		cache := stream.ExpertCacheBytes(el, slots)
		p.Regions = append(p.Regions, Region{fmt.Sprintf("expert cache (%d of %d experts)", slots, total), cache})
		p.ArenaBytes += cache
		// Expected reads with the experts routed uniformly: each of
		// Used·Layers selections misses with probability 1 - slots/total.
		perToken := int64(el.Hparams.Layers*minSlots) * int64(el.ExpertBytes)
		p.BytesPerToken = int64(float64(perToken) * (1 - float64(slots)/float64(total)))
		return p.finish()
	}
	fit := func(c config) *Plan {
		if build(c, minSlots).PeakBytes > req.Budget {
			return nil
		}
		lo, hi := minSlots, total
		for lo < hi {
			mid := (lo + hi + 1) / 2
			if build(c, mid).PeakBytes <= req.Budget {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		return build(c, lo)
	}
	c := want
	var steps []string
	found := fit(c)
	for found == nil && !req.CtxFixed && c.ctx > min(MinCtx, req.Ctx) {
		c.ctx = max(c.ctx/2, min(MinCtx, req.Ctx))
		steps = append(steps, "context "+strconv.Itoa(c.ctx))
		found = fit(c)
	}
	for found == nil && !req.KVFixed && c.kv < kvcache.Q4 {
		c.kv, _ = c.kv.Less()
		steps = append(steps, "kv "+c.kv.String())
		found = fit(c)
	}
	least := config{ctx: req.Ctx, kv: req.KV}
	if !req.CtxFixed {
		least.ctx = min(MinCtx, req.Ctx)
	}
	if !req.KVFixed {
		least.kv = max(least.kv, kvcache.Q4)
	}
	floor := build(least, minSlots).PeakBytes
	if found == nil {
		return nil, &BudgetError{Budget: req.Budget, Min: floor, Ctx: least.ctx, KV: least.kv, Experts: true}
	}
	if found.ExpertSlots < total {
		steps = append(steps, fmt.Sprintf("expert cache %d of %d experts", found.ExpertSlots, total))
	}
	found.Budget = req.Budget
	found.MinBudgetBytes = floor
	found.Degraded = steps
	return found, nil
}

// activeParams counts the weights one token uses: every tensor, the
// stacked routed-expert tensors (ffn_*_exps) only for the experts used.
func activeParams(f *format.File, hp *model.Hparams) int64 {
	var n int64
	for i := range f.Tensors {
		t := &f.Tensors[i]
		e := int64(t.Cols()) * int64(t.Rows())
		if hp.MoE.Experts > 0 && strings.HasSuffix(t.Name, "_exps.weight") {
			e = e / int64(hp.MoE.Experts) * int64(hp.MoE.Used)
		}
		n += e
	}
	return n
}

func (p *Plan) finish() *Plan {
	var sum int64
	for _, r := range p.Regions {
		sum += r.Bytes
	}
	margin := max(int64(float64(sum)*MarginFraction), MarginMin)
	p.Regions = append(p.Regions, Region{"safety margin", margin})
	p.PeakBytes = sum + margin
	p.MinBudgetBytes = p.PeakBytes
	return p
}

// normBytes is the float32 memory of the norms and biases (every
// one-row tensor), decoded once and kept, and of the matrices' outlier
// tables (quant.OutlierSuffix), kept resident while the matrices stream.
func normBytes(f *format.File) int64 {
	var n, biggest int64
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if strings.HasSuffix(t.Name, quant.OutlierSuffix) {
			n += int64(t.Size)
			continue
		}
		if t.Rows() <= 1 {
			n += 4 * int64(t.Cols())
			biggest = max(biggest, int64(t.Size))
		}
	}
	return n + biggest
}

// Print writes the plan as a table.
func (p *Plan) Print(w io.Writer) {
	fmt.Fprintf(w, "plan: mode %s, context %d, kv %s", p.Mode, p.Ctx, p.KVType)
	if p.Mode == Streaming {
		fmt.Fprintf(w, ", ring %s (%.2f layers), embedding rows %d, lm head resident %v", FormatBytes(p.RingBytes), p.RingLayers, p.EmbedRows, p.HeadResident)
	}
	if p.Mode == Experts {
		fmt.Fprintf(w, ", expert cache %d of %d experts of %s", p.ExpertSlots, p.ExpertsTotal, FormatBytes(p.ExpertBytes))
	}
	if p.ActiveParams > 0 {
		fmt.Fprintf(w, ", %.3gM active parameters per token", float64(p.ActiveParams)/1e6)
	}
	fmt.Fprintln(w)
	if len(p.Degraded) > 0 {
		fmt.Fprintf(w, "degraded to fit: %s\n", strings.Join(p.Degraded, ", "))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, r := range p.Regions {
		fmt.Fprintf(tw, "  %s\t%s\t\n", r.Name, FormatBytes(r.Bytes))
	}
	fmt.Fprintf(tw, "  peak\t%s\t\n", FormatBytes(p.PeakBytes))
	if p.Budget > 0 {
		fmt.Fprintf(tw, "  budget\t%s\t\n", FormatBytes(p.Budget))
	}
	fmt.Fprintf(tw, "  smallest budget that works\t%s\t\n", FormatBytes(p.MinBudgetBytes))
	if p.BytesPerToken > 0 {
		what := "read per token"
		if p.Mode == Experts {
			what = "expected read per token (uniform routing)"
		}
		fmt.Fprintf(tw, "  %s\t%s\t\n", what, FormatBytes(p.BytesPerToken))
	}
	tw.Flush()
}

// FormatBytes writes n with a binary unit (MiB, GiB).
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// ParseBytes parses a size such as 200MB, 1.5GiB, 64M or 4096: the
// decimal units KB, MB, GB, TB (also K, M, G, T) and the binary KiB,
// MiB, GiB, TiB; no unit means bytes.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := len(t)
	for i > 0 && (t[i-1] < '0' || t[i-1] > '9') && t[i-1] != '.' {
		i--
	}
	num, unit := strings.TrimSpace(t[:i]), strings.ToLower(strings.TrimSpace(t[i:]))
	mult := map[string]float64{"": 1, "b": 1, "k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12, "tb": 1e12,
		"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}[unit]
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || mult == 0 || v < 0 || v*mult > 1<<62 {
		return 0, fmt.Errorf("plan: bad size %q (want e.g. 200MB, 1.5GiB)", s)
	}
	return int64(v * mult), nil
}
