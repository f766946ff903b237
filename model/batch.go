package model

import (
	"fmt"
	"sync"

	"github.com/qsf-llm/qsf/kernels"
	"github.com/qsf-llm/qsf/kvcache"
	"github.com/qsf-llm/qsf/quant"
)

// maxBatch is the number of tokens ForwardBatch evaluates together. Each
// weight matrix is read from memory once per batch instead of once per
// token, which is what makes prompt processing faster than decoding.
const maxBatch = 64

// batch holds, for up to maxBatch tokens, the per-token vectors of the
// forward pass side by side (token-major), and their conversions to the
// activation types of the weights.
type batch struct {
	tier                              *kernels.Tier // converts with this tier's quantizers
	x, xb, q, k, v, qkv, att, hb, hb2 []float32
	acts                              [maxType][]byte
	done                              [maxType]bool
	in                                []float32 // the rows the matrices read now
	width                             int       // elements per row of in
	rx                                []float32 // one row rotated for the rotated types

	// attentionBatch's layer, tokens and their cached slots (used[i] for
	// token i), for its parallel attention (attendHeads).
	attLayer, attN int
	used           []int

	// The cos and sin of the RoPE angles of each token's position, a row
	// of csWidth per token, made once per batch.
	cs      []float32
	csWidth int

	// ForwardChunks' one-token sequences while their heads attend, the
	// function of their parallel attention (made once: no allocation),
	// and its logits, a row per sequence that asks for them.
	multi       []*State
	attendMulti func(lo, hi int)
	// prepareMulti stores the one-token sequences' keys and values
	// (prepareAttention of layer opLayer, on the threads when there is
	// attention enough to share), each sequence's error in multiErr.
	prepareMulti func(lo, hi int)
	multiErr     [maxMulti]error
	// attendWhole stores and attends sequences [lo, hi) of multi, each
	// whole (prepareAttention, then all its heads) on one thread: the
	// parallel attention when the sequences share out evenly.
	attendWhole func(lo, hi int)
	// copyLogits copies the logits of the LM head's rows to the states
	// that asked for them (multi), on the threads.
	copyLogits func(lo, hi int)
	logits     []float32

	// The per-token step between the mat-muls that eachRow runs (op), its
	// state, layer, weights and first position, and the method value the
	// pool runs it with (made once: no allocation).
	op         rowOp
	opState    *State
	opLayer    *Block
	opW, opB   []float32
	opPos      int
	runRowsFor func(lo, hi int)

	hp *Hparams // the model's, whose sizes the buffers have
}

// rowOp is a per-token step of a batch, run by eachRow.
type rowOp uint8

const (
	opRopeAngles rowOp = iota // the RoPE angles of the token's position (opPos + i)
	opNorm                    // xb = norm(x) with weight opW and bias opB
	opResidual                // xb += bias opB, then x += xb
	opFinishQKV               // q, k, v finished for attention (attendBatchTokens)
	opGated                   // hidden = act(gate)·up: hb rows of FFN, by hb2's
	opUpAct                   // hidden = act(hidden + UpB)
)

func newBatch(hp *Hparams) *batch {
	qkv := hp.QDim() + hp.KDim() + hp.VDim()
	b := &batch{
		x: make([]float32, maxBatch*hp.Embd), xb: make([]float32, maxBatch*hp.Embd),
		q: make([]float32, maxBatch*hp.QDim()), k: make([]float32, maxBatch*hp.KDim()),
		v: make([]float32, maxBatch*hp.VDim()), qkv: make([]float32, maxBatch*qkv),
		att: make([]float32, maxBatch*hp.Heads*hp.HeadDimV),
		hb:  make([]float32, maxBatch*2*hp.FFN), hb2: make([]float32, maxBatch*hp.FFN),
	}
	n := (hp.inputWidth() + 255) / 256 * 256
	for _, t := range activationTypes {
		size, _ := quant.RowBytes(t, n)
		b.acts[t] = make([]byte, maxBatch*size)
	}
	b.hp = hp
	b.used = make([]int, maxBatch)
	b.csWidth = max(hp.RopeDim, 2)
	b.cs = make([]float32, maxBatch*b.csWidth)
	size, _ := quant.RowBytes(quant.Q8_0, n)
	b.acts[rotSlot] = make([]byte, maxBatch*size)
	b.rx = make([]float32, n)
	b.runRowsFor = b.runRows
	return b
}

// ForwardBatch runs tokens at positions pos, pos+1, … (pos must equal
// KV.Len()) and, when logits is true, leaves the logits after the last one
// in s.Logits. The results are bit for bit those of calling Forward for
// each token: the mat-vecs become mat-muls that read each weight once per
// batch, and everything else runs token by token in position order. With
// a weight Source (layer streaming), a cache that evicts or the bitnet
// architecture, it simply calls Forward for each token.
func (s *State) ForwardBatch(tokens []int, pos int, logits bool) error {
	if len(tokens) <= 1 || s.Source != nil || s.KV.Evicts() || s.m.isBitNet() {
		for i, tok := range tokens {
			if err := s.Forward(tok, pos+i, logits && i == len(tokens)-1); err != nil {
				return err
			}
		}
		return nil
	}
	for start := 0; start < len(tokens); start += maxBatch {
		end := min(start+maxBatch, len(tokens))
		if err := s.forwardChunk(tokens[start:end], pos+start, logits && end == len(tokens)); err != nil {
			return err
		}
	}
	return nil
}

func (s *State) forwardChunk(tokens []int, pos int, logits bool) error {
	if lk, ok := s.Experts.(sync.Locker); ok { // shared by several States
		lk.Lock()
		defer lk.Unlock()
	}
	m := s.m
	hp := &m.Hparams
	n := len(tokens)
	if pos != s.KV.Len() || pos+n > s.KV.Capacity() {
		return fmt.Errorf("%w: positions %d..%d, capacity %d", kvcache.ErrFull, pos, pos+n-1, s.KV.Capacity())
	}
	if hp.LearnedPos && pos+n > m.PosEmbd.Rows {
		return fmt.Errorf("%w: position %d beyond the %d learned positions", kvcache.ErrFull, pos+n-1, m.PosEmbd.Rows)
	}
	for _, tok := range tokens {
		if tok < 0 || tok >= hp.Vocab {
			return fmt.Errorf("model: token %d outside vocabulary of %d", tok, hp.Vocab)
		}
	}
	if s.batch == nil {
		s.batch = newBatch(hp)
		s.batch.tier = s.tier
	}
	b := s.batch
	e := hp.Embd

	// Save the single-token vectors; the per-token steps below run on
	// rows of the batch through them.
	x, xb, q, k, v, att := s.x, s.xb, s.q, s.k, s.v, s.att
	defer func() { s.x, s.xb, s.q, s.k, s.v, s.att = x, xb, q, k, v, att }()

	for i, tok := range tokens {
		s.x, s.xb = row(b.x, i, e), row(b.xb, i, e)
		if err := s.embed(tok, pos+i); err != nil {
			return err
		}
	}
	if hp.Rope != RopeNone {
		b.opPos = pos
		s.eachRow(opRopeAngles, n, b.csWidth, nil)
	}
	for l := range m.Blocks {
		ly := &m.Blocks[l]
		if err := s.attentionBatch(ly, l, pos, n); err != nil {
			return err
		}
		if ly.Experts != nil {
			if err := s.moeFeedForwardBatch(ly, l, n); err != nil {
				return err
			}
			continue
		}
		if err := s.feedForwardBatch(l, n); err != nil {
			return err
		}
	}
	if err := s.KV.SetLen(pos + n); err != nil {
		return err
	}
	if logits {
		s.x, s.xb = row(b.x, n-1, e), xb
		s.norm(s.xb, s.x, m.OutNorm, m.OutNormB)
		s.input(s.xb)
		s.matVec(s.Logits, &m.Output)
	}
	return nil
}

// attentionBatch is attention for n tokens at positions pos.. .
func (s *State) attentionBatch(ly *Block, l, pos, n int) error {
	hp := &s.m.Hparams
	b := s.batch
	e, ad := hp.Embd, hp.Heads*hp.HeadDimV
	b.opW, b.opB = ly.AttnNorm, ly.AttnNormB
	s.eachRow(opNorm, n, e, ly)
	b.input(b.xb, e)
	if ly.QKV.Data != nil {
		s.matMul(b.qkv, &ly.QKV, n)
	} else {
		s.matMuls(n, b.q, &ly.Q, b.k, &ly.K, b.v, &ly.V)
	}
	if err := s.attendBatchTokens(ly, l, pos, n); err != nil {
		return err
	}
	b.input(b.att, ad)
	s.matMul(b.xb, &ly.O, n)
	b.opB = ly.OB
	s.eachRow(opResidual, n, e, ly)
	return nil
}

// attendBatchTokens is the attention of the n tokens of attentionBatch
// at positions pos.. (their q, k, v in the batch's rows), leaving the
// outputs in the batch's att rows.
func (s *State) attendBatchTokens(ly *Block, l, pos, n int) error {
	hp := &s.m.Hparams
	b := s.batch
	qd, kd, vd, ad := hp.QDim(), hp.KDim(), hp.VDim(), hp.Heads*hp.HeadDimV
	if t := s.KV.Type(); t != kvcache.F32 && t != kvcache.F16 {
		// A quantized cache codes a group of slots once it is full:
		// what a token reads depends on what is stored after it, so
		// each token attends before the next one is stored.
		for i := range n {
			s.q, s.k, s.v, s.att = row(b.q, i, qd), row(b.k, i, kd), row(b.v, i, vd), row(b.att, i, ad)
			if ly.QKV.Data != nil {
				s.splitQKV(row(b.qkv, i, qd+kd+vd))
			}
			// The cache records the position of each entry as its
			// length.
			if err := s.KV.SetLen(pos + i); err != nil {
				return err
			}
			if err := s.attendToken(ly, l, pos+i); err != nil {
				return err
			}
		}
		return nil
	}
	// The tokens' q, k and v are finished (biases, norms, rotation) on
	// the threads, each with the angles of its position (b.cs), and
	// stored in position order.
	s.eachRow(opFinishQKV, n, qd+kd+vd, ly)
	work := 0
	for i := range n {
		// The cache records the position of each entry as its length.
		if err := s.KV.SetLen(pos + i); err != nil {
			return err
		}
		slot, err := s.KV.Slot(l)
		if err != nil {
			return err
		}
		s.KV.Store(l, slot, row(b.k, i, kd), row(b.v, i, vd))
		b.used[i] = s.KV.Used(l)
		work += hp.Heads * b.used[i] * (hp.HeadDimK + hp.HeadDimV)
	}
	// Every token's key and value are in the cache now; each head attends
	// for every token, the heads shared by the threads. A token reads
	// only the slots filled up to its own position (the cache of a batch
	// does not evict, and a slot past a token's is not read: the f16
	// values' padding has zero weight), so the sums are those of
	// attending token by token.
	b.attLayer, b.attN = l, n
	if work <= inlineAttention {
		s.attendBatch(0, hp.Heads)
	} else {
		s.pool.Parallel(hp.Heads, s.attendBatch)
	}
	return nil
}

// attendHeads computes heads [lo, hi) of the attention of the tokens
// of attentionBatch, token after token, with s's per-head buffers.
func (b *batch) attendHeads(s *State, att attender, lo, hi int) {
	hp := b.hp
	qd, ad := hp.QDim(), hp.Heads*hp.HeadDimV
	for i := range b.attN {
		att(s, attnArgs{layer: b.attLayer, n: b.used[i], q: row(b.q, i, qd), att: row(b.att, i, ad)}, lo, hi)
	}
}

// feedForwardBatch is feedForward for n tokens of layer l.
func (s *State) feedForwardBatch(l, n int) error {
	ly, err := s.acquire(l, StageGateUp)
	if err != nil {
		return err
	}
	hp := &s.m.Hparams
	b := s.batch
	e, f := hp.Embd, hp.FFN
	b.opW, b.opB = ly.FFNNorm, ly.FFNNormB
	s.eachRow(opNorm, n, e, ly)
	b.input(b.xb, e)
	hidden := b.hb[:n*f]
	switch {
	case ly.GateUp.Data != nil:
		s.matMul(b.hb, &ly.GateUp, n) // rows of 2f: [gate; up]
		// Compact in place: row i moves down to i·f, below the rows of
		// 2f still to be read.
		for i := range n {
			gu := b.hb[i*2*f : (i+1)*2*f]
			gated(s.tier, b.hb2[:f], gu[:f], gu[f:], hp.Act)
			copy(b.hb[i*f:(i+1)*f], b.hb2[:f])
		}
	case ly.Gate.Data != nil:
		s.matMuls(n, hidden, &ly.Gate, b.hb2[:n*f], &ly.Up, nil, nil)
		s.eachRow(opGated, n, f, ly)
	default:
		s.matMul(hidden, &ly.Up, n)
		s.eachRow(opUpAct, n, f, ly)
	}
	s.release(l, StageGateUp)
	if ly, err = s.acquire(l, StageDown); err != nil {
		return err
	}
	b.input(hidden, f)
	s.matMul(b.xb, &ly.Down, n)
	s.release(l, StageDown)
	b.opB = ly.DownB
	s.eachRow(opResidual, n, e, ly)
	return nil
}

// matMul computes the rows of w times each of the n current input rows,
// out[i*rows+r], with the same arithmetic as n matVecs.
func (s *State) matMul(out []float32, w *Tensor, n int) {
	s.pool.MatMul(w.Type, out[:n*w.Rows], w.Data, w.Cols, s.batch.get(s.pool, w.Type, n), n)
	tensorScale(out[:n*w.Rows], w)
	s.batchOutliers(out, w, n)
}

// batchOutliers adds w's outlier table, if any, to the products out of w
// with each of the n current input rows.
func (s *State) batchOutliers(out []float32, w *Tensor, n int) {
	if w.Outliers == nil {
		return
	}
	for i := range n {
		w.addOutliers(row(out, i, w.Rows), row(s.batch.in, i, s.batch.width))
	}
}

// matMuls computes out1 = W1·x, out2 = W2·x and, when w3 is not nil,
// out3 = W3·x for each of the n current input rows as one job of the
// pool (Q, K and V; gate and up), so that its threads wait for each other
// once; the results are those of matMul on each.
func (s *State) matMuls(n int, out1 []float32, w1 *Tensor, out2 []float32, w2 *Tensor, out3 []float32, w3 *Tensor) {
	k := 0
	for _, e := range [...]struct {
		out []float32
		w   *Tensor
	}{{out1, w1}, {out2, w2}, {out3, w3}} {
		if e.w != nil {
			s.mmTasks[k] = kernels.MatMulTask{Type: e.w.Type, Out: e.out[:n*e.w.Rows], W: e.w.Data, Cols: e.w.Cols, Acts: s.batch.get(s.pool, e.w.Type, n), N: n}
			k++
		}
	}
	s.pool.MatMuls(s.mmTasks[:k])
	s.mmTasks = [len(s.mmTasks)]kernels.MatMulTask{} // hold no weights past the call
	tensorScale(out1[:n*w1.Rows], w1)
	tensorScale(out2[:n*w2.Rows], w2)
	s.batchOutliers(out1, w1, n)
	s.batchOutliers(out2, w2, n)
	if w3 != nil {
		tensorScale(out3[:n*w3.Rows], w3)
		s.batchOutliers(out3, w3, n)
	}
}

// input makes the first rows of x (width elements each) the rows the
// following matMuls read; their conversions are made lazily per type.
func (b *batch) input(x []float32, width int) {
	b.in, b.width = x, width
	b.done = [maxType]bool{}
}

// get returns the n input rows converted to the activation type of weight
// type wt, back to back, converted on the threads of pool.
func (b *batch) get(pool *kernels.Pool, wt quant.Type, n int) []byte {
	tr, _ := kernels.Lookup(wt)
	at := tr.VecDot
	size, _ := quant.RowBytes(at, b.width)
	if tr.RotatedInput {
		buf := b.acts[rotSlot][:n*size]
		if !b.done[rotSlot] {
			rx := b.rx[:b.width]
			for i := range n {
				copy(rx, row(b.in, i, b.width))
				b.tier.Rotate64(rx)
				b.tier.Quantize(at, buf[i*size:(i+1)*size], rx)
			}
			b.done[rotSlot] = true
		}
		return buf
	}
	if at == quant.F32 && littleEndian {
		// The activations of F32 weights are the rows' own bytes:
		// the mat-muls read them in place (no output is ever an input).
		return f32Bytes(b.in[:n*b.width])
	}
	buf := b.acts[at][:n*size]
	if !b.done[at] && n*b.width <= inlineRows {
		for i := range n {
			b.tier.Quantize(at, buf[i*size:(i+1)*size], row(b.in, i, b.width))
		}
		b.done[at] = true
	}
	if !b.done[at] {
		pool.Parallel(n, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				b.tier.Quantize(at, buf[i*size:(i+1)*size], row(b.in, i, b.width))
			}
		})
		b.done[at] = true
	}
	return buf
}

// inlineRows is the size of a batch's rows (tokens × width, in elements)
// up to which the per-token steps between the mat-muls (conversions of
// the input, norms, activations, residual adds) run on the calling
// thread: a few microseconds of work for the few tokens of a decoding
// step of several sequences, less than a round trip through the pool's
// workers costs.
const inlineRows = 8192

// eachRow runs the per-token step op (its arguments in the batch's op
// fields) for every token i in [0, n) of a batch whose rows have width
// elements, of layer ly, the tokens shared between the threads of the pool
// (inline when they are few and small): the steps between the mat-muls
// (norms, activations, residual adds), whose tokens are independent, so
// the bits do not depend on the split. It allocates nothing.
func (s *State) eachRow(op rowOp, n, width int, ly *Block) {
	b := s.batch
	b.op, b.opState, b.opLayer = op, s, ly
	if n*width <= inlineRows {
		b.runRows(0, n)
	} else {
		s.pool.Parallel(n, b.runRowsFor)
	}
	b.opState, b.opLayer, b.opW, b.opB = nil, nil, nil, nil
}

// runRows runs the batch's current per-token step (eachRow) for tokens
// [lo, hi).
func (b *batch) runRows(lo, hi int) {
	s, ly, hp := b.opState, b.opLayer, b.hp
	e, f := hp.Embd, hp.FFN
	switch b.op {
	case opRopeAngles:
		for i := lo; i < hi; i++ {
			ropeAngles(row(b.cs, i, b.csWidth), hp.RopeDim, b.opPos+i, hp.RopeBase)
		}
	case opNorm:
		s.normRows(b.xb[lo*e:hi*e], b.x[lo*e:hi*e], e, b.opW, b.opB)
	case opResidual:
		for i := lo; i < hi; i++ {
			addBias(row(b.xb, i, e), b.opB)
			s.tier.AddF32(row(b.x, i, e), row(b.xb, i, e))
		}
	case opFinishQKV:
		qd, kd, vd := hp.QDim(), hp.KDim(), hp.VDim()
		for i := lo; i < hi; i++ {
			q, k, v := row(b.q, i, qd), row(b.k, i, kd), row(b.v, i, vd)
			if ly.QKV.Data != nil {
				qkv := row(b.qkv, i, qd+kd+vd)
				copy(q, qkv[:qd])
				copy(k, qkv[qd:qd+kd])
				copy(v, qkv[qd+kd:])
			}
			s.finishQKV(ly, q, k, v, row(b.cs, i, b.csWidth))
		}
	case opGated:
		for i := lo; i < hi; i++ {
			h := row(b.hb, i, f)
			gated(s.tier, h, h, row(b.hb2, i, f), hp.Act)
		}
	case opUpAct:
		for i := lo; i < hi; i++ {
			h := row(b.hb, i, f)
			addBias(h, ly.UpB)
			activate(s.tier, h, hp.Act)
		}
	}
}

// row returns row i of width elements of m.
func row(m []float32, i, width int) []float32 { return m[i*width : (i+1)*width : (i+1)*width] }
