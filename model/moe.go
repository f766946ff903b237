package model

import (
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/qsf-llm/qsf/kernels"
	"github.com/qsf-llm/qsf/quant"
)

// Mixture-of-experts feed-forward blocks, computed as llama.cpp b4748's
// llm_build_moe_ffn does: router logits, a softmax over all experts, the
// top k by probability in the order of ggml_argsort, the selected
// probabilities (renormalised to sum to 1 where the architecture does
// it), each selected expert's SwiGLU FFN, and the weighted outputs added
// in selection order; Qwen2-MoE adds a shared expert scaled by the
// sigmoid of its own gate.

// MoEParams are the mixture-of-experts hyperparameters. Experts is 0 for a
// dense model.
type MoEParams struct {
	Experts   int // routed experts per layer (expert_count)
	Used      int // experts each token is routed to (expert_used_count)
	ExpertFFN int // hidden width of one routed expert
	SharedFFN int // hidden width of the shared expert; 0 when there is none
	// NormWeights says the selected experts' probabilities are divided by
	// their sum (Mixtral, Qwen3-MoE); Qwen2-MoE uses them as they are.
	NormWeights bool
}

// moeInfo is what an architecture says about its experts.
type moeInfo struct {
	required     bool // the architecture is always a mixture of experts
	sharedExpert bool // a gated shared expert runs beside the routed ones
	normWeights  bool
}

// parseMoE reads the expert hyperparameters of arch. ffn is the
// architecture's feed_forward_length, the expert width when no
// expert-specific key says otherwise.
func parseMoE(md Metadata, arch string, info moeInfo, ffn int) (MoEParams, error) {
	n, ok := md.Uint(arch + ".expert_count")
	if !ok || n == 0 {
		if info.required {
			return MoEParams{}, fmt.Errorf("%w: %s.expert_count missing", ErrMetadata, arch)
		}
		return MoEParams{}, nil
	}
	used, _ := md.Uint(arch + ".expert_used_count")
	if n > 1<<16 || used == 0 || used > n {
		return MoEParams{}, fmt.Errorf("%w: %d experts, %d used per token", ErrMetadata, n, used)
	}
	p := MoEParams{Experts: int(n), Used: int(used), ExpertFFN: ffn, NormWeights: info.normWeights}
	width := func(key string, def int) (int, error) {
		v, ok := md.Uint(arch + "." + key)
		if !ok {
			return def, nil
		}
		if v == 0 || v > 1<<24 {
			return 0, fmt.Errorf("%w: %s.%s = %d out of range", ErrMetadata, arch, key, v)
		}
		return int(v), nil
	}
	var err error
	if arch != "llama" { // llama.cpp's llama graph uses feed_forward_length
		if p.ExpertFFN, err = width("expert_feed_forward_length", ffn/p.Used); err != nil {
			return MoEParams{}, err
		}
	}
	if info.sharedExpert {
		if p.SharedFFN, err = width("expert_shared_feed_forward_length", ffn); err != nil {
			return MoEParams{}, err
		}
	}
	if p.ExpertFFN == 0 {
		return MoEParams{}, fmt.Errorf("%w: expert width 0", ErrMetadata)
	}
	return p, nil
}

// inputWidth is the longest vector a matrix of the model multiplies.
func (hp *Hparams) inputWidth() int {
	return max(hp.Embd, hp.FFN, hp.Heads*hp.HeadDimV, hp.MoE.ExpertFFN, hp.MoE.SharedFFN)
}

// Experts are the weights of a mixture-of-experts FFN block. The routed
// experts' matrices are stored stacked, as GGUF's 3-D ffn_*_exps tensors:
// expert e is rows [e·r, (e+1)·r) of a tensor of Experts·r rows (see
// Expert).
type Experts struct {
	Router         Tensor // ffn_gate_inp: one row of Embd per expert
	Gate, Up, Down Tensor // ffn_{gate,up,down}_exps, stacked

	// The shared expert (Qwen2-MoE); zero when absent.
	SharedGateInp                    Tensor // ffn_gate_inp_shexp: one row of Embd
	SharedGate, SharedUp, SharedDown Tensor
}

// Expert returns the gate, up and down matrices of routed expert e as
// views of the stacked tensors.
func (x *Experts) Expert(e int) (gate, up, down Tensor) {
	n := x.Router.Rows
	f, d := x.Gate.Rows/n, x.Down.Rows/n
	return x.Gate.Slice(e*f, (e+1)*f), x.Up.Slice(e*f, (e+1)*f), x.Down.Slice(e*d, (e+1)*d)
}

// Matrices returns pointers to the matrices of x, so that a loader can
// point them at new data.
func (x *Experts) Matrices() []*Tensor {
	return []*Tensor{&x.Router, &x.Gate, &x.Up, &x.Down, &x.SharedGateInp, &x.SharedGate, &x.SharedUp, &x.SharedDown}
}

// RepackableMatrices is Matrices without the stacked expert tensors
// whose experts are not a whole number of 8-row groups (a layout that
// interleaves groups of rows, kernels.Repack, keeps each expert's rows
// together only when they are), and without any stacked tensor when
// stacked is false.
func (x *Experts) RepackableMatrices(stacked bool) []*Tensor {
	n := x.Router.Rows
	var ok []*Tensor
	for _, t := range x.Matrices() {
		isStacked := t == &x.Gate || t == &x.Up || t == &x.Down
		if !isStacked || (stacked && n > 0 && t.Rows%n == 0 && (t.Rows/n)%8 == 0) {
			ok = append(ok, t)
		}
	}
	return ok
}

// experts loads the mixture-of-experts tensors of the layer with prefix
// p.
func (l *loader) experts(p string) *Experts {
	mp := &l.hp.MoE
	n, f, e := mp.Experts, mp.ExpertFFN, l.hp.Embd
	x := &Experts{}
	x.Router = l.matrix(p+"ffn_gate_inp.weight", n, e, true)
	x.Gate = l.matrix(p+"ffn_gate_exps.weight", n*f, e, true)
	x.Up = l.matrix(p+"ffn_up_exps.weight", n*f, e, true)
	x.Down = l.matrix(p+"ffn_down_exps.weight", n*e, f, true)
	l.noOutliers(&x.Gate, &x.Up, &x.Down)
	if mp.SharedFFN > 0 {
		x.SharedGateInp = l.matrix(p+"ffn_gate_inp_shexp.weight", 1, e, true)
		x.SharedGate = l.matrix(p+"ffn_gate_shexp.weight", mp.SharedFFN, e, true)
		x.SharedUp = l.matrix(p+"ffn_up_shexp.weight", mp.SharedFFN, e, true)
		x.SharedDown = l.matrix(p+"ffn_down_shexp.weight", e, mp.SharedFFN, true)
	}
	return x
}

// route turns one token's router logits into its experts and their
// weights as llama.cpp does. probs (len Experts) receives the softmax of
// logits; sel (len Used) the selected experts, highest probability first
// with ggml_argsort's tie order; w (len Used) their weights. order is
// scratch of len Experts.
func route(sel []int32, w, probs, logits []float32, order []int32, norm bool) {
	softmaxRow(probs, logits)
	topK(sel, probs, order)
	for i, e := range sel {
		w[i] = probs[e]
	}
	if norm {
		var sum float64 // ggml_sum_rows adds in ggml_float
		for _, v := range w {
			sum += float64(v)
		}
		s := float32(sum)
		for i := range w {
			w[i] /= s
		}
	}
}

// softmaxRow writes the softmax of x into dst as ggml_soft_max_f32 does
// for an unmasked row: exponentials of x - max through ggml_v_expf in
// groups of 8 (each group summed as hsum_float_8) and expf for the rest,
// their sum in float64, then every element times float32(1/sum).
func softmaxRow(dst, x []float32) {
	mx := float32(math.Inf(-1))
	for _, v := range x {
		mx = max(mx, v)
	}
	n8 := len(x) &^ 7
	var sum float64
	if n8 > 0 {
		sum = kernels.ExpSubF32(dst[:n8], x[:n8], mx)
	}
	for i := n8; i < len(x); i++ {
		e := float32(math.Exp(float64(x[i] - mx)))
		dst[i] = e
		sum += float64(e)
	}
	inv := float32(1 / sum)
	for i := range x {
		dst[i] *= inv
	}
}

// topK writes into sel the indices of the len(sel) largest values of p as
// ggml_top_k finds them: ggml_argsort in descending order, an exchange
// sort that swaps position j with a later k only when p at j is strictly
// smaller, of which the first len(sel) positions are final after as many
// passes.
func topK(sel []int32, p []float32, order []int32) {
	for i := range order {
		order[i] = int32(i)
	}
	for j := range sel {
		for k := j + 1; k < len(order); k++ {
			if p[order[j]] < p[order[k]] {
				order[j], order[k] = order[k], order[j]
			}
		}
		sel[j] = order[j]
	}
}

// moeState holds the buffers of the expert FFN of one token.
type moeState struct {
	logits, probs []float32   // router logits and probabilities
	order         []int32     // argsort scratch
	sel           []int32     // the selected experts
	run           []int32     // the order to compute them in
	weights       []float32   // their weights
	gate, up      []float32   // Used × ExpertFFN: each expert's gate (then hidden) and up
	out           []float32   // Used × Embd: each expert's output
	shGate, shUp  []float32   // the shared expert's gate (then hidden) and up
	shOut         []float32   // the shared expert's output
	shScore       []float32   // its gate input (one value)
	views         [][3]Tensor // per selected expert: its gate, up and down as views of the stacked tensors
	acts          [][]byte    // per selected expert: its hidden vector converted for its down matrix
	tasks         []kernels.MatVecTask
	gu            []*Tensor // the gate and up matrices of expertGroup's experts

	batch *moeBatch // ForwardBatch's buffers, allocated on first use
}

func moeVectors(hp *Hparams) []stateVector {
	mp := &hp.MoE
	if mp.Experts == 0 {
		return nil
	}
	f32 := func(name string, n int, dst func(*moeState) *[]float32) stateVector {
		return stateVector{"moe." + name, func(s *State) *[]float32 { return dst(s.moe) }, n}
	}
	return []stateVector{
		f32("logits", mp.Experts, func(m *moeState) *[]float32 { return &m.logits }),
		f32("probs", mp.Experts, func(m *moeState) *[]float32 { return &m.probs }),
		f32("weights", mp.Used, func(m *moeState) *[]float32 { return &m.weights }),
		f32("gate", mp.Used*mp.ExpertFFN, func(m *moeState) *[]float32 { return &m.gate }),
		f32("up", mp.Used*mp.ExpertFFN, func(m *moeState) *[]float32 { return &m.up }),
		f32("out", mp.Used*hp.Embd, func(m *moeState) *[]float32 { return &m.out }),
		f32("shgate", mp.SharedFFN, func(m *moeState) *[]float32 { return &m.shGate }),
		f32("shup", mp.SharedFFN, func(m *moeState) *[]float32 { return &m.shUp }),
		f32("shout", hp.Embd, func(m *moeState) *[]float32 { return &m.shOut }),
		f32("shscore", 1, func(m *moeState) *[]float32 { return &m.shScore }),
	}
}

// initMoE allocates the expert buffers of s (none for a dense model).
func (s *State) initMoE(alloc func(name string, n int) []byte) error {
	mp := &s.m.MoE
	if mp.Experts == 0 {
		return nil
	}
	g := min(mp.Used, maxUsedInline)
	s.moe = &moeState{views: make([][3]Tensor, mp.Used), acts: make([][]byte, mp.Used),
		tasks: make([]kernels.MatVecTask, 0, 2*g), gu: make([]*Tensor, 2*g)}
	for i := range s.moe.acts {
		n := expertActBytes(mp.ExpertFFN)
		if s.moe.acts[i] = alloc("moe.acts", n); len(s.moe.acts[i]) != n {
			return fmt.Errorf("model: state buffer moe.acts: allocator returned %d bytes, want %d", len(s.moe.acts[i]), n)
		}
	}
	for _, e := range moeVectors(&s.m.Hparams) {
		b := alloc(e.name, e.n*4)
		if len(b) != e.n*4 {
			return fmt.Errorf("model: state buffer %s: allocator returned %d bytes, want %d", e.name, len(b), e.n*4)
		}
		*e.dst(s) = float32s(b)
	}
	ints := alloc("moe.sel", (mp.Experts+2*mp.Used)*4)
	if len(ints) != (mp.Experts+2*mp.Used)*4 {
		return fmt.Errorf("model: state buffer moe.sel: allocator returned %d bytes", len(ints))
	}
	all := int32s(ints)
	s.moe.order, s.moe.sel, s.moe.run = all[:mp.Experts], all[mp.Experts:mp.Experts+mp.Used], all[mp.Experts+mp.Used:]
	return nil
}

// int32s views b (4-byte aligned) as int32 values.
func int32s(b []byte) []int32 {
	if len(b) == 0 {
		return []int32{}
	}
	return unsafe.Slice((*int32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// moeStateBytes is the memory initMoE takes.
func moeStateBytes(hp *Hparams) int64 {
	var n int64
	for _, e := range moeVectors(hp) {
		n += int64(e.n)*4 + 64
	}
	if hp.MoE.Experts > 0 {
		n += int64(hp.MoE.Experts+2*hp.MoE.Used)*4 + 64
		n += int64(hp.MoE.Used) * int64(expertActBytes(hp.MoE.ExpertFFN)+64)
	}
	return n
}

// expertActBytes is the room a hidden vector of n elements takes
// converted to any activation type.
func expertActBytes(n int) int {
	n = (n + 255) / 256 * 256
	most := 0
	for _, t := range activationTypes {
		size, _ := quant.RowBytes(t, n)
		most = max(most, size)
	}
	return most
}

// ExpertSource provides the routed experts' matrices to a State whose
// model does not hold them in memory (expert streaming). The forward pass
// asks for at most MoEParams.Used experts of a layer before it is done
// with them, so a source may reuse the memory of an expert once that many
// others have been asked for since. A source shared by several States
// implements sync.Locker: each forward pass (Forward, and each chunk of
// ForwardBatch) holds it throughout, so the States take turns.
type ExpertSource interface {
	// Expert returns the gate, up and down matrices of routed expert e
	// of layer l.
	Expert(l, e int) (gate, up, down *Tensor, err error)
}

// ExpertPrefetcher is an ExpertSource that can start loading experts
// before they are asked for: the forward pass announces a layer's
// selected experts as soon as the router has chosen them (for a prompt
// batch, all the experts some token selected). When it announces, the
// experts it asked for before are done with. PrefetchExperts may reorder
// experts into the order it expects them to be ready in; the forward
// pass computes them in that order (the results do not depend on it).
// It returns how many of the experts, from the first in that order, are
// ready: Expert returns them without waiting, so the forward pass
// computes them together.
type ExpertPrefetcher interface {
	PrefetchExperts(l int, experts []int32) (ready int)
}

// ExpertGuesser is an ExpertSource that wants to know, before a layer's
// attention, the experts its router will probably select, to start
// loading them while the attention computes. The guess is the layer's
// router applied to the residual stream as it enters the layer. When it
// guesses, the experts asked for before are done with.
type ExpertGuesser interface {
	// WantsGuess reports whether a guess for layer l would be of use
	// now; the forward pass computes none otherwise (the guess costs a
	// product by the layer's router).
	WantsGuess(l int) bool
	GuessExperts(l int, experts []int32)
}

// guessExperts tells a guessing ExpertSource the experts block
// l will probably select, so that their reads overlap the block's
// attention: the top experts of its router on the residual stream as it
// enters the block (before the attention adds to it). It leaves s.xb and
// the routing buffers to be overwritten.
func (s *State) guessExperts(l int) {
	g, ok := s.Experts.(ExpertGuesser)
	if !ok || s.Source != nil || !g.WantsGuess(l) {
		return
	}
	ly := &s.m.Blocks[l]
	ms := s.moe
	s.norm(s.xb, s.x, ly.FFNNorm, ly.FFNNormB)
	s.input(s.xb)
	s.matVec(ms.logits, &ly.Experts.Router)
	topK(ms.sel, ms.logits, ms.order) // the softmax keeps the order
	g.GuessExperts(l, ms.sel)
}

// expert returns the matrices of routed expert e of layer l: from the
// State's ExpertSource when it has one, else views of the stacked tensors
// of x, kept in view slot i (of Used) until the slot is asked for again.
func (s *State) expert(l int, x *Experts, e, i int) (gate, up, down *Tensor, err error) {
	if s.Experts != nil {
		return s.Experts.Expert(l, e)
	}
	v := &s.moe.views[i]
	v[0], v[1], v[2] = x.Expert(e)
	return &v[0], &v[1], &v[2], nil
}

// moeFeedForward is feedForward for a mixture-of-experts block: x +=
// Σ w_i·E_{e_i}(h) (+ sigmoid(g·h)·S(h)) with h = norm(x).
func (s *State) moeFeedForward(l int) error {
	ly, err := s.acquire(l, StageGateUp)
	if err != nil {
		return err
	}
	s.norm(s.xb, s.x, ly.FFNNorm, ly.FFNNormB)
	if err := s.mixExperts(l, ly.Experts); err != nil {
		return err
	}
	s.release(l, StageGateUp)
	if _, err := s.acquire(l, StageDown); err != nil {
		return err
	}
	s.release(l, StageDown)
	add(s.x, s.xb)
	return nil
}

// mixExperts replaces s.xb, the normalized input of block l, by the
// output of its experts x.
func (s *State) mixExperts(l int, x *Experts) error {
	hp := &s.m.Hparams
	mp := &hp.MoE
	ms := s.moe

	s.input(s.xb)
	s.matVec(ms.logits, &x.Router)
	route(ms.sel, ms.weights, ms.probs, ms.logits, ms.order, mp.NormWeights)
	copy(ms.run, ms.sel)
	ready := len(ms.run)
	if pf, ok := s.Experts.(ExpertPrefetcher); ok {
		ready = pf.PrefetchExperts(l, ms.run)
	}
	// The experts ready now are computed together, the others one at a
	// time as their reads finish.
	for lo := 0; lo < len(ms.run); {
		hi := lo + 1
		if lo == 0 {
			hi = min(max(ready, 1), len(ms.run), maxUsedInline)
		}
		if err := s.expertGroup(l, x, ms.run[lo:hi]); err != nil {
			return err
		}
		lo = hi
	}
	if mp.SharedFFN > 0 {
		s.input(s.xb)
		s.matVecs(ms.shScore, &x.SharedGateInp, ms.shGate, &x.SharedGate, ms.shUp, &x.SharedUp)
		gated(s.tier, ms.shGate, ms.shGate, ms.shUp, SiLU)
		s.input(ms.shGate)
		s.matVec(ms.shOut, &x.SharedDown)
	}
	combineExperts(s.xb, ms.out, ms.weights, ms.shOut, ms.shScore[0], mp.SharedFFN > 0)
	return nil
}

// expertGroup computes the outputs of the selected experts exs of block l
// (each into its row of s.moe.out) from s.xb: their gate and up products
// as one job of the pool, then their down products as another, so that
// the pool's threads wait for each other twice per group rather than
// twice per expert.
func (s *State) expertGroup(l int, x *Experts, exs []int32) error {
	hp := &s.m.Hparams
	ms := s.moe
	f, e := hp.MoE.ExpertFFN, hp.Embd
	var downs [maxUsedInline]*Tensor
	var slots [maxUsedInline]int
	s.input(s.xb)
	tasks := ms.tasks[:0]
	for k, ex := range exs {
		i := slices.Index(ms.sel, ex)
		gate, up, down, err := s.expert(l, x, int(ex), i)
		if err != nil {
			return err
		}
		downs[k], slots[k] = down, i
		for _, w := range [2]*Tensor{gate, up} {
			if s.Observe != nil {
				s.Observe(w, s.acts.x[:w.Cols])
			}
		}
		tasks = append(tasks,
			kernels.MatVecTask{Type: gate.Type, Out: row(ms.gate, i, f), W: gate.Data, Cols: gate.Cols, Act: s.acts.get(gate.Type)},
			kernels.MatVecTask{Type: up.Type, Out: row(ms.up, i, f), W: up.Data, Cols: up.Cols, Act: s.acts.get(up.Type)})
		ms.gu[2*k], ms.gu[2*k+1] = gate, up
	}
	s.pool.MatVecs(tasks)
	tasks = tasks[:0]
	for k := range exs {
		i := slots[k]
		tensorScale(row(ms.gate, i, f), ms.gu[2*k])
		tensorScale(row(ms.up, i, f), ms.gu[2*k+1])
		hidden := row(ms.gate, i, f)
		gated(s.tier, hidden, hidden, row(ms.up, i, f), SiLU)
		down := downs[k]
		if s.Observe != nil {
			s.Observe(down, hidden)
		}
		act := s.acts.convert(ms.acts[i], hidden, down.Type)
		tasks = append(tasks, kernels.MatVecTask{Type: down.Type, Out: row(ms.out, i, e), W: down.Data, Cols: down.Cols, Act: act})
	}
	s.pool.MatVecs(tasks)
	for k := range exs {
		tensorScale(row(ms.out, slots[k], e), downs[k])
	}
	clear(ms.tasks[:cap(ms.tasks)]) // hold no weights past the call
	clear(ms.gu)
	return nil
}

// maxUsedInline is how many selected experts expertGroup computes at
// once at most (mixExperts cuts larger groups).
const maxUsedInline = 16

// combineExperts writes Σ_i w[i]·out_i (+ g·shared) into dst, rounding as
// llama.cpp's separate ggml_mul and ggml_add nodes do: every product,
// then every sum, in float32, experts in selection order. g is the shared
// expert's gate input s, turned into silu(s)/s as llama.cpp computes the
// sigmoid.
func combineExperts(dst, out, w, shared []float32, s float32, hasShared bool) {
	e := len(dst)
	for j := range dst {
		dst[j] = float32(out[j] * w[0])
	}
	for i := 1; i < len(w); i++ {
		o := row(out, i, e)
		for j := range dst {
			dst[j] += float32(o[j] * w[i])
		}
	}
	if !hasShared {
		return
	}
	var sv [1]float32
	kernels.SiluF32(sv[:], []float32{s})
	g := sv[0] / s
	for j := range dst {
		dst[j] += float32(shared[j] * g)
	}
}

// moeBatch holds ForwardBatch's expert buffers: every (token, slot)
// routing of a batch, the tokens grouped by expert, and their outputs.
type moeBatch struct {
	logits, probs []float32 // maxBatch × Experts
	sel           []int32   // maxBatch × Used
	weights       []float32 // maxBatch × Used
	order         []int32   // Experts
	byExpert      [][]int32 // per expert, the (token·Used + slot) routed to it
	present       []int32   // the experts some token of the batch is routed to
	in            []float32 // the gathered inputs of one expert
	gate, up      []float32 // its hidden vectors
	down          []float32 // its outputs
	out           []float32 // maxBatch × Used × Embd, by (token, slot)
	shScore       []float32 // maxBatch
	shGate, shUp  []float32 // maxBatch × SharedFFN
	shOut         []float32 // maxBatch × Embd
}

// BatchBytes returns the memory of the buffers ForwardBatch allocates on
// its first call (prompts of more than one token), for a model of hp.
func BatchBytes(hp *Hparams) int64 {
	qkv := hp.QDim() + hp.KDim() + hp.VDim()
	floats := maxBatch * (2*hp.Embd + hp.QDim() + hp.KDim() + hp.VDim() + qkv + hp.Heads*hp.HeadDimV + 3*hp.FFN)
	n := (hp.inputWidth() + 255) / 256 * 256
	var acts int
	for _, t := range activationTypes {
		size, _ := quant.RowBytes(t, n)
		acts += maxBatch * size
	}
	if mp := &hp.MoE; mp.Experts > 0 {
		u, e, f, sf := mp.Used, hp.Embd, mp.ExpertFFN, mp.SharedFFN
		floats += maxBatch * (2*mp.Experts + u + 2*e + 2*f + u*e + 1 + 2*sf + e)
		acts += 4 * (maxBatch*u + mp.Experts)
	}
	return int64(floats)*4 + int64(acts)
}

func newMoEBatch(hp *Hparams) *moeBatch {
	mp := &hp.MoE
	n, u, e, f := maxBatch, mp.Used, hp.Embd, mp.ExpertFFN
	return &moeBatch{
		logits: make([]float32, n*mp.Experts), probs: make([]float32, n*mp.Experts),
		sel: make([]int32, n*u), weights: make([]float32, n*u), order: make([]int32, mp.Experts),
		byExpert: make([][]int32, mp.Experts), present: make([]int32, 0, mp.Experts),
		in: make([]float32, n*e), gate: make([]float32, n*f), up: make([]float32, n*f), down: make([]float32, n*e),
		out:     make([]float32, n*u*e),
		shScore: make([]float32, n), shGate: make([]float32, n*mp.SharedFFN), shUp: make([]float32, n*mp.SharedFFN),
		shOut: make([]float32, n*e),
	}
}

// moeFeedForwardBatch is moeFeedForward for the n tokens of a batch. The
// tokens are grouped by expert so that each selected expert's matrices
// are read once per batch; every product is the one Forward computes.
func (s *State) moeFeedForwardBatch(ly *Block, l, n int) error {
	hp := &s.m.Hparams
	mp := &hp.MoE
	b := s.batch
	if s.moe.batch == nil {
		s.moe.batch = newMoEBatch(hp)
	}
	mb := s.moe.batch
	x := ly.Experts
	e, f, u, ne := hp.Embd, mp.ExpertFFN, mp.Used, mp.Experts
	for i := range n {
		s.norm(row(b.xb, i, e), row(b.x, i, e), ly.FFNNorm, ly.FFNNormB)
	}
	b.input(b.xb, e)
	s.matMul(mb.logits, &x.Router, n)
	if mp.SharedFFN > 0 {
		s.matMul(mb.shScore[:n], &x.SharedGateInp, n)
		s.matMul(mb.shGate[:n*mp.SharedFFN], &x.SharedGate, n)
		s.matMul(mb.shUp[:n*mp.SharedFFN], &x.SharedUp, n)
	}
	for ex := range mb.byExpert {
		mb.byExpert[ex] = mb.byExpert[ex][:0]
	}
	for i := range n {
		sel := mb.sel[i*u : (i+1)*u]
		route(sel, mb.weights[i*u:(i+1)*u], row(mb.probs, i, ne), row(mb.logits, i, ne), mb.order, mp.NormWeights)
		for slot, ex := range sel {
			mb.byExpert[ex] = append(mb.byExpert[ex], int32(i*u+slot))
		}
	}
	mb.present = mb.present[:0]
	for ex, routed := range mb.byExpert {
		if len(routed) > 0 {
			mb.present = append(mb.present, int32(ex))
		}
	}
	if pf, ok := s.Experts.(ExpertPrefetcher); ok {
		pf.PrefetchExperts(l, mb.present)
	}
	for _, ex32 := range mb.present {
		ex := int(ex32)
		routed := mb.byExpert[ex]
		k := len(routed)
		gate, up, down, err := s.expert(l, x, ex, 0)
		if err != nil {
			return err
		}
		for j, r := range routed {
			copy(row(mb.in, j, e), row(b.xb, int(r)/u, e))
		}
		b.input(mb.in, e)
		s.matMul(mb.gate, gate, k)
		s.matMul(mb.up, up, k)
		for j := range k {
			gated(s.tier, row(mb.gate, j, f), row(mb.gate, j, f), row(mb.up, j, f), SiLU)
		}
		b.input(mb.gate, f)
		s.matMul(mb.down, down, k)
		for j, r := range routed {
			copy(row(mb.out, int(r), e), row(mb.down, j, e))
		}
	}
	if mp.SharedFFN > 0 {
		sf := mp.SharedFFN
		for i := range n {
			gated(s.tier, row(mb.shGate, i, sf), row(mb.shGate, i, sf), row(mb.shUp, i, sf), SiLU)
		}
		b.input(mb.shGate, sf)
		s.matMul(mb.shOut, &x.SharedDown, n)
	}
	for i := range n {
		combineExperts(row(b.xb, i, e), mb.out[i*u*e:(i+1)*u*e], mb.weights[i*u:(i+1)*u],
			row(mb.shOut, i, e), mb.shScore[i], mp.SharedFFN > 0)
		add(row(b.x, i, e), row(b.xb, i, e))
	}
	return nil
}
