package model

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"unsafe"

	"github.com/qsf-llm/qsf/kernels"
	"github.com/qsf-llm/qsf/kvcache"
	"github.com/qsf-llm/qsf/quant"
)

// Model is an architecture's hyperparameters with its weights. It is
// immutable and may be shared by any number of States.
type Model struct {
	Hparams
	*Weights
}

// State is one sequence's working memory: its KV cache and every buffer
// the forward pass writes. It is allocated once; the forward pass
// allocates nothing.
type State struct {
	m    *Model
	pool *kernels.Pool
	tier *kernels.Tier // pool's tier: the element-wise kernels run on it too
	KV   *kvcache.Cache

	x       []float32 // residual stream
	xb      []float32 // normalized input of a sub-block
	q       []float32 // queries, all heads
	k, v    []float32 // this position's keys and values, all KV heads
	qkv     []float32 // fused projection output
	att     []float32 // attention output, all heads
	scores  []float32 // attention weights, Heads × capacity
	vlanes  []float32 // per-head lane accumulators of the attention output
	ropeCS  []float32 // cos and sin of the RoPE angles of position ropePos
	ropePos int

	batch *batch // buffers of ForwardBatch, allocated on first use

	hb     []float32 // FFN hidden (gate, or fused gate+up)
	hb2    []float32 // FFN hidden (up)
	Logits []float32

	acts    activations           // xb (or att, hb) quantized for the matrices that read it
	tasks   [3]kernels.MatVecTask // the products of one matVecs call
	mmTasks [3]kernels.MatMulTask // the products of one matMuls call

	// BatchOrder makes attention add in the order llama.cpp uses when it
	// evaluates several tokens in one batch (llamafile's tinyBLAS: 8 lanes
	// and hsum) instead of its one-token order (ggml_vec_dot_f32). The two
	// differ only in the last bits; llama-perplexity uses the batch order.
	BatchOrder bool

	// Source, when non-nil, provides the weights of each layer, the
	// embedding rows and the LM head instead of Model.Weights (layer
	// streaming). Nil means every weight is resident.
	Source WeightSource

	// Experts, when non-nil, provides the routed experts of a
	// mixture-of-experts model instead of Model.Weights (expert
	// streaming).
	Experts ExpertSource
	moe     *moeState // the expert FFN's buffers (mixture-of-experts models)

	// Observe, when non-nil, is called by Forward before each product of
	// a dense matrix w with its float32 input x (len w.Cols), for
	// calibration: for example to accumulate the activation energy of
	// each column. It must not keep or modify x. ForwardBatch does not
	// call it.
	Observe func(w *Tensor, x []float32)

	// ObserveLayer, when non-nil, is called by Forward with the residual
	// stream x entering each layer l and, with l equal to the number of
	// layers, leaving the last one, for calibration: for example to
	// measure how much each layer changes its input. It must not keep or
	// modify x. ForwardBatch does not call it.
	ObserveLayer func(l int, x []float32)

	// set per call for the attention workers
	layer, pos int
	n          int // slots attended to
	attend     func(lo, hi int)
	// attendBatch is attentionBatch's parallel attention: heads [lo, hi)
	// of every token of the batch (made once: no allocation).
	attendBatch func(lo, hi int)
}

// WeightSource provides weights on demand to a State whose model does not
// hold them all in memory. Forward calls Begin once per token, then, for
// every layer in order, Acquire and Release for each Stage in order and,
// when it computes logits, Head/ReleaseHead for every chunk of the LM head
// in order. The State uses a stage's matrices only between their
// acquisition and release; it releases each stage as soon as its
// products are computed, so the source may reuse that memory while the
// rest of the layer computes.
type WeightSource interface {
	// Begin announces a token; logits says whether its LM head will be
	// computed (so the source can read ahead what comes next).
	Begin(logits bool)
	// Acquire returns the weights of layer l with the matrices of stage
	// st ready (those of stages already released may not be).
	Acquire(l int, st Stage) (*Block, error)
	// Release says that the matrices of stage st of layer l are no longer
	// used.
	Release(l int, st Stage)
	// Embedding writes the (unscaled) embedding row of token to dst.
	Embedding(dst []float32, token int) error
	// HeadChunks is the number of row chunks the LM head is streamed in;
	// 0 means Weights.Output is resident.
	HeadChunks() int
	// Head returns chunk c of the LM head: rows [row0, row0+t.Rows).
	Head(c int) (t *Tensor, row0 int, err error)
	// ReleaseHead says that chunk c is no longer used.
	ReleaseHead(c int)
}

// Stage is a group of a layer's matrices that the forward pass multiplies
// by the same input, in the order it uses them.
type Stage int

// The stages of a layer, in order.
const (
	StageQKV    Stage = iota // Q, K and V, or the fused QKV
	StageOut                 // the attention output O
	StageGateUp              // gate and up, the fused gate_up, or up alone
	StageDown                // down
	NumStages                // the number of stages
)

// matrixStages is the stage of each entry of Block.Matrices.
var matrixStages = [...]Stage{StageQKV, StageQKV, StageQKV, StageQKV, StageOut, StageGateUp, StageGateUp, StageGateUp, StageDown}

// StageOf returns the stage of the matrix at index i of Block.Matrices.
func StageOf(i int) Stage { return matrixStages[i] }

// StateOptions control NewStateWith.
type StateOptions struct {
	// Capacity is the number of KV cache slots (positions held at once).
	Capacity int
	// KV sets the cache's storage type and eviction policy; its Alloc is
	// replaced by Alloc below when that is set.
	KV kvcache.Options
	// Alloc, when non-nil, provides every buffer of the State (n zeroed
	// bytes, 64-byte aligned), for example from an arena. Nil means the Go
	// heap.
	Alloc func(name string, n int) []byte
}

// StateBytes returns the memory of a State's buffers apart from its KV
// cache, for a model of hp with capacity slots.
func StateBytes(hp *Hparams, capacity int) int64 {
	var n int64
	for _, e := range stateVectors(hp, capacity) {
		n += int64(e.n)*4 + 64
	}
	return n + actBytes(hp.inputWidth()) + moeStateBytes(hp)
}

type stateVector struct {
	name string
	dst  func(s *State) *[]float32
	n    int
}

func stateVectors(hp *Hparams, capacity int) []stateVector {
	return []stateVector{
		{"x", func(s *State) *[]float32 { return &s.x }, hp.Embd},
		{"xb", func(s *State) *[]float32 { return &s.xb }, hp.Embd},
		{"q", func(s *State) *[]float32 { return &s.q }, hp.QDim()},
		{"k", func(s *State) *[]float32 { return &s.k }, hp.KDim()},
		{"v", func(s *State) *[]float32 { return &s.v }, hp.VDim()},
		{"qkv", func(s *State) *[]float32 { return &s.qkv }, hp.QDim() + hp.KDim() + hp.VDim()},
		{"att", func(s *State) *[]float32 { return &s.att }, hp.Heads * hp.HeadDimV},
		{"scores", func(s *State) *[]float32 { return &s.scores }, hp.Heads * capacity},
		{"vlanes", func(s *State) *[]float32 { return &s.vlanes }, hp.Heads * hp.HeadDimV * 32},
		{"ropecs", func(s *State) *[]float32 { return &s.ropeCS }, max(hp.RopeDim, 2)},
		{"hb", func(s *State) *[]float32 { return &s.hb }, 2 * hp.FFN},
		{"hb2", func(s *State) *[]float32 { return &s.hb2 }, hp.FFN},
		{"logits", func(s *State) *[]float32 { return &s.Logits }, hp.Vocab},
	}
}

// NewState allocates the working memory of one sequence with room for
// capacity positions, computing with pool.
func (m *Model) NewState(capacity int, pool *kernels.Pool) (*State, error) {
	return m.NewStateWith(pool, StateOptions{Capacity: capacity})
}

// NewStateWith allocates the working memory of one sequence as opts say,
// computing with pool.
func (m *Model) NewStateWith(pool *kernels.Pool, opts StateOptions) (*State, error) {
	hp := &m.Hparams
	alloc := opts.Alloc
	if alloc == nil {
		alloc = func(_ string, n int) []byte { return make([]byte, n) }
	}
	kvOpts := opts.KV
	if opts.Alloc != nil {
		kvOpts.Alloc = func(n int) []byte { return alloc("kv", n) }
	}
	kv, err := kvcache.NewWith(kvcache.Shape{Layers: hp.Layers, Capacity: opts.Capacity, KVHeads: hp.KVHeads,
		HeadDimK: hp.HeadDimK, HeadDimV: hp.HeadDimV}, kvOpts)
	if err != nil {
		return nil, err
	}
	s := &State{m: m, pool: pool, tier: pool.Tier(), KV: kv}
	s.acts.tier = s.tier
	for _, e := range stateVectors(hp, opts.Capacity) {
		b := alloc(e.name, e.n*4)
		if len(b) != e.n*4 {
			return nil, fmt.Errorf("model: state buffer %s: allocator returned %d bytes, want %d", e.name, len(b), e.n*4)
		}
		*e.dst(s) = float32s(b)
	}
	s.acts.init(hp.inputWidth(), alloc)
	if err := s.initMoE(alloc); err != nil {
		return nil, err
	}
	att := attenderFor(kv.Type())
	s.attend = func(lo, hi int) { att(s, attnArgs{layer: s.layer, n: s.n, q: s.q, att: s.att}, lo, hi) }
	s.attendBatch = func(lo, hi int) { s.batch.attendHeads(s, att, lo, hi) }
	return s, nil
}

// littleEndian reports whether this machine stores a float32 as the
// activation of F32 weights encodes it (little-endian), so that a vector's
// memory is its activation.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// f32Bytes views x as its bytes in the machine's order.
func f32Bytes(x []float32) []byte {
	if len(x) == 0 {
		return []byte{}
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 4*len(x))
}

// float32s views b (4-byte aligned) as float32 values.
func float32s(b []byte) []float32 {
	if len(b) == 0 {
		return []float32{}
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// Forward runs token at position pos (which must equal KV.Len()) through
// the model, appends its keys and values to the cache and, when logits is
// true, leaves the next-token logits in s.Logits.
func (s *State) Forward(token, pos int, logits bool) error {
	m := s.m
	hp := &m.Hparams
	if token < 0 || token >= hp.Vocab {
		return fmt.Errorf("model: token %d outside vocabulary of %d", token, hp.Vocab)
	}
	if pos != s.KV.Len() || (pos >= s.KV.Capacity() && !s.KV.Evicts()) {
		return fmt.Errorf("%w: position %d, capacity %d", kvcache.ErrFull, pos, s.KV.Capacity())
	}
	if hp.LearnedPos && pos >= m.PosEmbd.Rows {
		return fmt.Errorf("%w: position %d beyond the %d learned positions", kvcache.ErrFull, pos, m.PosEmbd.Rows)
	}

	if lk, ok := s.Experts.(sync.Locker); ok { // shared by several States
		lk.Lock()
		defer lk.Unlock()
	}
	src := s.Source
	if src != nil {
		src.Begin(logits)
	}
	if err := s.embed(token, pos); err != nil {
		return err
	}
	for l := range m.Blocks {
		if s.ObserveLayer != nil {
			s.ObserveLayer(l, s.x)
		}
		if s.Experts != nil {
			s.guessExperts(l)
		}
		if err := s.attention(l, pos); err != nil {
			return err
		}
		if err := s.feedForward(l); err != nil {
			return err
		}
	}
	if s.ObserveLayer != nil {
		s.ObserveLayer(len(m.Blocks), s.x)
	}
	if err := s.KV.SetLen(pos + 1); err != nil {
		return err
	}
	if logits {
		s.norm(s.xb, s.x, m.OutNorm, m.OutNormB)
		s.input(s.xb)
		if src == nil || src.HeadChunks() == 0 {
			s.matVec(s.Logits, &m.Output)
			return nil
		}
		for c := range src.HeadChunks() {
			t, row0, err := src.Head(c)
			if err != nil {
				return err
			}
			s.matVec(s.Logits[row0:row0+t.Rows], t)
			src.ReleaseHead(c)
		}
	}
	return nil
}

// Hidden writes the final hidden state of the last token Forward ran (its
// residual stream after the output norm, the vector the LM head reads)
// into dst, which must hold Hparams.Embd values. It is valid after
// Forward, not after a ForwardBatch of more than one token.
func (s *State) Hidden(dst []float32) {
	s.norm(dst[:len(s.x)], s.x, s.m.OutNorm, s.m.OutNormB)
}

// embed loads the token's embedding row into the residual stream.
func (s *State) embed(token, pos int) error {
	m := s.m
	if s.Source != nil {
		if err := s.Source.Embedding(s.x, token); err != nil {
			return err
		}
	} else {
		m.TokenEmbd.Row(s.x, token)
	}
	if m.EmbedScale != 1 {
		scale(s.x, m.EmbedScale)
	}
	if m.LearnedPos {
		m.PosEmbd.Row(s.xb, pos)
		s.tier.AddF32(s.x, s.xb)
	}
	return nil
}

// acquire returns layer l with the matrices of stage st ready: from the
// Source when streaming, else the model's own.
func (s *State) acquire(l int, st Stage) (*Block, error) {
	if s.Source == nil {
		return &s.m.Blocks[l], nil
	}
	return s.Source.Acquire(l, st)
}

// release hands the matrices of stage st of layer l back to the Source.
func (s *State) release(l int, st Stage) {
	if s.Source != nil {
		s.Source.Release(l, st)
	}
}

// attention is the first half of block l: x += Wo · attend(q, K, V).
func (s *State) attention(l, pos int) error {
	ly, err := s.acquire(l, StageQKV)
	if err != nil {
		return err
	}
	s.norm(s.xb, s.x, ly.AttnNorm, ly.AttnNormB)

	// Project to queries, keys and values.
	s.input(s.xb)
	if ly.QKV.Data != nil {
		s.matVec(s.qkv, &ly.QKV)
		s.splitQKV(s.qkv)
	} else {
		s.matVecs(s.q, &ly.Q, s.k, &ly.K, s.v, &ly.V)
	}
	mulScale(s.q, ly.QScale)
	mulScale(s.k, ly.KScale)
	mulScale(s.v, ly.VScale)
	s.release(l, StageQKV)
	if err := s.attendToken(ly, l, pos); err != nil {
		return err
	}

	// Output projection back into the residual stream.
	if ly, err = s.acquire(l, StageOut); err != nil {
		return err
	}
	s.subNorm(s.att, ly.AttnSubNorm)
	s.input(s.att)
	s.matVec(s.xb, &ly.O)
	s.release(l, StageOut)
	mulScale(s.xb, ly.OScale)
	addBias(s.xb, ly.OB)
	s.tier.AddF32(s.x, s.xb)
	return nil
}

// splitQKV copies a fused projection into s.q, s.k and s.v.
func (s *State) splitQKV(qkv []float32) {
	qd, kd := s.m.QDim(), s.m.KDim()
	copy(s.q, qkv[:qd])
	copy(s.k, qkv[qd:qd+kd])
	copy(s.v, qkv[qd+kd:])
}

// attendToken takes s.q, s.k and s.v of the token at pos as projected,
// adds the biases, normalizes and rotates them, stores the key and value
// in the cache and leaves the attention output in s.att.
func (s *State) attendToken(ly *Block, l, pos int) error {
	if err := s.prepareAttention(ly, l, pos); err != nil {
		return err
	}
	s.attendCache(l, pos)
	return nil
}

// prepareAttention is attendToken up to the attention: the biases, norms
// and rotation of q and k, and the store of the key and value at pos.
func (s *State) prepareAttention(ly *Block, l, pos int) error {
	hp := &s.m.Hparams
	if hp.Rope != RopeNone && (l == 0 || s.ropePos != pos) {
		ropeAngles(s.ropeCS, hp.RopeDim, pos, hp.RopeBase)
		s.ropePos = pos
	}
	s.finishQKV(ly, s.q, s.k, s.v, s.ropeCS)
	slot, err := s.KV.Slot(l)
	if err != nil {
		return err
	}
	s.KV.Store(l, slot, s.k, s.v)
	return nil
}

// finishQKV adds the biases to a token's q, k and v as projected,
// normalizes q and k where the model does and rotates them by the angles
// cs of the token's position (ropeAngles).
func (s *State) finishQKV(ly *Block, q, k, v, cs []float32) {
	hp := &s.m.Hparams
	addBias(q, ly.QB)
	addBias(k, ly.KB)
	addBias(v, ly.VB)

	// Qwen3 normalizes each head of q and k before the rotation.
	if ly.QNorm != nil {
		for h := 0; h < hp.Heads; h++ {
			head := q[h*hp.HeadDimK : (h+1)*hp.HeadDimK]
			rmsNorm(head, head, ly.QNorm, hp.NormEps)
		}
	}
	if ly.KNorm != nil {
		for h := 0; h < hp.KVHeads; h++ {
			head := k[h*hp.HeadDimK : (h+1)*hp.HeadDimK]
			rmsNorm(head, head, ly.KNorm, hp.NormEps)
		}
	}

	// Rotate by position.
	if hp.Rope != RopeNone {
		rope(s.tier, q, hp.Heads, hp.HeadDimK, hp.RopeDim, cs, hp.Rope)
		rope(s.tier, k, hp.KVHeads, hp.HeadDimK, hp.RopeDim, cs, hp.Rope)
	}
	if hp.QPreScale {
		scale(q, attentionScale(hp))
	}
}

// attendCache lets each query head of the token at pos attend to the
// cached positions of layer l (whose key and value are stored), leaving
// the output in s.att, and tells an eviction policy that tracks them the
// attention weights.
func (s *State) attendCache(l, pos int) {
	hp := &s.m.Hparams
	s.layer, s.pos, s.n = l, pos, s.KV.Used(l)
	if hp.Heads*s.n*(hp.HeadDimK+hp.HeadDimV) <= inlineAttention {
		s.attend(0, hp.Heads) // less work than handing it out costs
	} else {
		s.pool.Parallel(hp.Heads, s.attend)
	}
	if s.KV.Tracks() {
		c := s.KV.Capacity()
		for h := range hp.Heads {
			s.KV.Observe(l, s.scores[h*c:h*c+s.n])
		}
	}
}

// inlineAttention is the size of an attention (heads × positions × the
// widths of a key and a value, about its multiply-adds) up to which the
// calling thread does it alone: a few microseconds, about what a round
// trip through the pool's workers costs. Larger ones are shared: the
// attention of every layer of a decode step is work the other threads
// otherwise wait through, and each head has a cost that short contexts
// do not shrink (the f32 cache's 32 lanes of output sums, the f16 one's
// values padded to 32 positions): over positions 1 to 65 a tinyllama-1.1b
// layer's attention took about 40 µs of CPU time, 2.7% of a 1-thread
// decode step (f32 cache, loaded machine).
const inlineAttention = 1 << 14

// feedForward is the second half of block l: x += FFN(norm(x)).
func (s *State) feedForward(l int) error {
	hp := &s.m.Hparams
	f := hp.FFN
	if hp.MoE.Experts > 0 {
		return s.moeFeedForward(l)
	}

	ly, err := s.acquire(l, StageGateUp)
	if err != nil {
		return err
	}
	s.norm(s.xb, s.x, ly.FFNNorm, ly.FFNNormB)

	hidden := s.hb[:f]
	s.input(s.xb)
	switch {
	case ly.GateUp.Data != nil: // fused [gate; up]
		s.matVec(s.hb, &ly.GateUp)
		gated(s.tier, hidden, s.hb[:f], s.hb[f:2*f], hp.Act)
	case ly.Gate.Data != nil: // SwiGLU / GeGLU
		s.matVecs(s.hb[:f], &ly.Gate, s.hb2, &ly.Up, nil, nil)
		mulScale(s.hb[:f], ly.GateScale)
		mulScale(s.hb2, ly.UpScale)
		gated(s.tier, hidden, s.hb[:f], s.hb2, hp.Act)
	default: // plain MLP
		s.matVec(hidden, &ly.Up)
		addBias(hidden, ly.UpB)
		activate(s.tier, hidden, hp.Act)
	}
	s.release(l, StageGateUp)
	s.subNorm(hidden, ly.FFNSubNorm)

	if ly, err = s.acquire(l, StageDown); err != nil {
		return err
	}
	s.input(hidden)
	s.matVec(s.xb, &ly.Down)
	s.release(l, StageDown)
	mulScale(s.xb, ly.DownScale)
	addBias(s.xb, ly.DownB)
	s.tier.AddF32(s.x, s.xb)
	return nil
}

// norm writes RMSNorm(x)·w, or LayerNorm(x)·w + b when the model uses
// LayerNorm, into dst.
func (s *State) norm(dst, x, w, b []float32) {
	if s.m.LayerNorm {
		layerNorm(dst, x, w, b, s.m.NormEps)
		return
	}
	rmsNorm(dst, x, w, s.m.NormEps)
}

// normRows is norm of each row of width elements of x into the same row
// of dst.
func (s *State) normRows(dst, x []float32, width int, w, b []float32) {
	if s.m.LayerNorm {
		for r := 0; r+width <= len(x); r += width {
			layerNorm(dst[r:r+width], x[r:r+width], w, b, s.m.NormEps)
		}
		return
	}
	rmsNormRows(dst, x, width, w, s.m.NormEps)
}

// input makes x the vector the following matVecs multiply. Its quantized
// forms are computed lazily, once per activation type, so that matrices
// reading the same input (Q, K, V; gate, up) share one conversion.
func (s *State) input(x []float32) { s.acts.reset(x) }

// matVec computes out = W·x for the current input x.
func (s *State) matVec(out []float32, w *Tensor) {
	if s.Observe != nil {
		s.Observe(w, s.acts.x[:w.Cols])
	}
	s.pool.MatVec(w.Type, out, w.Data, w.Cols, s.acts.get(w.Type))
	tensorScale(out, w)
	w.addOutliers(out, s.acts.x)
}

// tensorScale multiplies the product out of w by w's own scale, if any.
func tensorScale(out []float32, w *Tensor) {
	if w.Scale != 0 {
		scale(out, w.Scale)
	}
}

// matVecs computes out1 = W1·x, out2 = W2·x and, when w3 is not nil,
// out3 = W3·x for the current input x as one job of the pool, so that its
// threads wait for each other once.
func (s *State) matVecs(out1 []float32, w1 *Tensor, out2 []float32, w2 *Tensor, out3 []float32, w3 *Tensor) {
	n := 0
	for _, e := range [...]struct {
		out []float32
		w   *Tensor
	}{{out1, w1}, {out2, w2}, {out3, w3}} {
		if e.w != nil {
			if s.Observe != nil {
				s.Observe(e.w, s.acts.x[:e.w.Cols])
			}
			s.tasks[n] = kernels.MatVecTask{Type: e.w.Type, Out: e.out, W: e.w.Data, Cols: e.w.Cols, Act: s.acts.get(e.w.Type)}
			n++
		}
	}
	s.pool.MatVecs(s.tasks[:n])
	s.tasks = [len(s.tasks)]kernels.MatVecTask{} // hold no weights past the call
	tensorScale(out1, w1)
	tensorScale(out2, w2)
	w1.addOutliers(out1, s.acts.x)
	w2.addOutliers(out2, s.acts.x)
	if w3 != nil {
		tensorScale(out3, w3)
		w3.addOutliers(out3, s.acts.x)
	}
}

// activations holds the current input vector and its conversions to the
// activation types of the weights that read it.
type activations struct {
	tier *kernels.Tier // converts with this tier's quantizers
	x    []float32
	rx   []float32 // x rotated by quant.Rotate64 (tier.Rotate64), for the rotated types
	bufs [maxType][]byte
	done [maxType]bool
}

const maxType = 64

// rotSlot is the slot of bufs and done that holds the rotated input
// converted to Q8_0, the activation of QSF's rotated types; no ggml
// activation type has this id.
const rotSlot = maxType - 1

var activationTypes = []quant.Type{quant.F32, quant.F16, quant.BF16, quant.Q8_0, quant.Q8_1, quant.Q8_K}

// init sizes a buffer per activation type for vectors of up to n elements.
func (a *activations) init(n int, alloc func(name string, n int) []byte) {
	n = (n + 255) / 256 * 256 // whole blocks of every type
	for _, t := range activationTypes {
		size, _ := quant.RowBytes(t, n)
		a.bufs[t] = alloc("activations", size)
	}
	size, _ := quant.RowBytes(quant.Q8_0, n)
	a.bufs[rotSlot] = alloc("activations", size)
	a.rx = float32s(alloc("activations", 4*n))
}

// actBytes is the memory activations.init takes for vectors of n.
func actBytes(n int) int64 {
	n = (n + 255) / 256 * 256
	var total int64
	for _, t := range activationTypes {
		size, _ := quant.RowBytes(t, n)
		total += int64(size) + 64
	}
	size, _ := quant.RowBytes(quant.Q8_0, n)
	return total + int64(size) + 64 + 4*int64(n) + 64
}

func (a *activations) reset(x []float32) {
	a.x = x
	a.done = [maxType]bool{}
}

// get returns the input converted to the activation type of weight type wt.
func (a *activations) get(wt quant.Type) []byte {
	tr, _ := kernels.Lookup(wt) // weight types are checked at load (or repacked, see kernels.Repack)
	at := tr.VecDot
	size, _ := quant.RowBytes(at, len(a.x))
	if tr.RotatedInput {
		buf := a.bufs[rotSlot][:size]
		if !a.done[rotSlot] {
			rx := a.rx[:len(a.x)]
			copy(rx, a.x)
			a.tier.Rotate64(rx)
			a.tier.Quantize(at, buf, rx)
			a.done[rotSlot] = true
		}
		return buf
	}
	buf := a.bufs[at][:size]
	if !a.done[at] {
		a.tier.Quantize(at, buf, a.x)
		a.done[at] = true
	}
	return buf
}

// convert writes x converted to the activation type of weight type wt
// into dst (room for it), as get converts its input, and returns it.
func (a *activations) convert(dst []byte, x []float32, wt quant.Type) []byte {
	tr, _ := kernels.Lookup(wt)
	at := tr.VecDot
	size, _ := quant.RowBytes(at, len(x))
	buf := dst[:size]
	if tr.RotatedInput {
		rx := a.rx[:len(x)]
		copy(rx, x)
		a.tier.Rotate64(rx)
		a.tier.Quantize(at, buf, rx)
		return buf
	}
	a.tier.Quantize(at, buf, x)
	return buf
}

// attentionScale is 1/√d for the head width d, as llama.cpp computes it in
// float32.
func attentionScale(hp *Hparams) float32 {
	return 1 / float32(math.Sqrt(float64(hp.HeadDimK)))
}

// scoreScale is the factor the attention scores are multiplied by: the
// attention scale, or 1 for models whose queries were scaled already
// (QPreScale).
func scoreScale(hp *Hparams) float32 {
	if hp.QPreScale {
		return 1
	}
	return attentionScale(hp)
}
