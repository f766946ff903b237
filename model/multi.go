package model

import (
	"errors"
	"fmt"

	"github.com/qsf-llm/qsf/kvcache"
)

// maxMulti is the most sequences ForwardMulti evaluates in one pass.
const maxMulti = 16

// MaxChunkRows is the most tokens (of all the sequences together) one
// pass of ForwardChunks evaluates; it splits larger calls into passes.
const MaxChunkRows = maxBatch

// ForwardMulti runs one token for each of several sequences in one pass:
// tokens[i] at position states[i].KV.Len() of states[i]. It is
// ForwardChunks with one token per sequence.
func ForwardMulti(states []*State, tokens []int, logits bool) error {
	if len(states) != len(tokens) {
		return fmt.Errorf("model: ForwardMulti of %d states and %d tokens", len(states), len(tokens))
	}
	chunks := make([][]int, len(tokens))
	want := make([]bool, len(tokens))
	for i := range tokens {
		chunks[i], want[i] = tokens[i:i+1], logits
	}
	return ForwardChunks(states, chunks, want)
}

// ForwardChunks runs a run of tokens for each of several sequences in
// one pass (continuous batching, and prompts evaluated while others
// decode): tokens[i] at positions states[i].KV.Len(), … of states[i].
// Each weight matrix is read once for all the tokens (a mat-mul over a
// row per token) while each sequence attends to its own KV cache, its
// tokens in order; with logits[i], states[i].Logits holds the logits
// after its last token. The results equal Forward on each state alone,
// token after token, bit for bit. A call of more than MaxChunkRows
// tokens or 16 sequences runs as several passes.
//
// Under layer streaming (a weight Source on every state; the qsf package
// gives all the sessions of a model one Source) the weights of a pass
// come from the first state's Source, read once for all the tokens; each
// state's Source provides its embedding rows. The pass
// keeps its batch buffers on the Go heap, outside the streaming arena.
//
// The states must be distinct states of one Model. States with a cache
// that evicts, a mixture of experts, the bitnet architecture, or a mix of
// streaming and resident states are run one after another with Forward
// (ForwardBatch).
func ForwardChunks(states []*State, tokens [][]int, logits []bool) error {
	return (*Batch)(nil).ForwardChunks(states, tokens, logits)
}

// A Batch holds the buffers of ForwardChunks passes (the rows of their
// tokens, the logits), so that the passes of many sequences share one set
// instead of allocating one in each pass's first state. The zero value is
// ready to use; it allocates on first use. A Batch serves one pass at a
// time.
type Batch struct{ b *batch }

// ForwardChunks is the function ForwardChunks with the buffers of bt (a
// nil Batch: those of the pass's first state). A lone sequence's run of
// several tokens is a pass too (no buffers of its own).
func (bt *Batch) ForwardChunks(states []*State, tokens [][]int, logits []bool) error {
	if len(states) != len(tokens) || len(states) != len(logits) {
		return fmt.Errorf("model: ForwardChunks of %d states, %d token runs and %d logits flags", len(states), len(tokens), len(logits))
	}
	if len(states) == 0 {
		return nil
	}
	m := states[0].m
	for i, st := range states {
		if st.m != m {
			return errors.New("model: ForwardChunks of states of different models")
		}
		if len(tokens[i]) == 0 {
			return errors.New("model: ForwardChunks of no tokens for a state")
		}
		for _, o := range states[:i] {
			if o == st {
				return errors.New("model: ForwardChunks of one state twice")
			}
		}
	}
	single := m.isBitNet() || m.Hparams.MoE.Experts > 0 ||
		len(states) == 1 && (len(tokens[0]) == 1 || states[0].Source == nil && bt == nil)
	for _, st := range states {
		single = single || (st.Source == nil) != (states[0].Source == nil) || st.Experts != nil || st.KV.Evicts()
	}
	if single {
		for i, st := range states {
			if err := st.ForwardBatch(tokens[i], st.KV.Len(), logits[i]); err != nil {
				return err
			}
		}
		return nil
	}
	// Passes of at most maxMulti sequences and MaxChunkRows tokens: the
	// sequences in order, a run split between passes when it does not
	// fit (its logits only after its last token).
	var ps [maxMulti]*State
	var pt [maxMulti][]int
	var pl [maxMulti]bool
	done := 0 // tokens of states[i] already evaluated
	for i := 0; i < len(states); {
		n, rows := 0, 0
		for i < len(states) && n < maxMulti && rows < MaxChunkRows {
			run := tokens[i][done:]
			take := min(len(run), MaxChunkRows-rows)
			ps[n], pt[n], pl[n] = states[i], run[:take], logits[i] && take == len(run)
			n, rows = n+1, rows+take
			if take < len(run) {
				done += take
				break // the pass is full
			}
			i, done = i+1, 0
		}
		if err := bt.forwardChunks(ps[:n], pt[:n], pl[:n], rows); err != nil {
			return err
		}
	}
	return nil
}

// vectors are a state's single-token buffers, which forwardChunks points
// at rows of the shared batch while it runs.
type vectors struct{ x, xb, q, k, v, att []float32 }

// forwardChunks is one pass of ForwardChunks: rows tokens in all, at most
// maxMulti states.
func (bt *Batch) forwardChunks(states []*State, tokens [][]int, logits []bool, rows int) error {
	d := states[0] // its worker pool (and Source) serve every state, its batch buffers without bt
	m := d.m
	hp := &m.Hparams
	var pos, first [maxMulti]int // each state's first position and first row
	r := 0
	for i, st := range states {
		pos[i], first[i] = st.KV.Len(), r
		r += len(tokens[i])
		for _, tok := range tokens[i] {
			if tok < 0 || tok >= hp.Vocab {
				return fmt.Errorf("model: token %d outside vocabulary of %d", tok, hp.Vocab)
			}
		}
		if end := pos[i] + len(tokens[i]); end > st.KV.Capacity() {
			return fmt.Errorf("%w: position %d, capacity %d", kvcache.ErrFull, end-1, st.KV.Capacity())
		} else if hp.LearnedPos && end > m.PosEmbd.Rows {
			return fmt.Errorf("%w: position %d beyond the %d learned positions", kvcache.ErrFull, end-1, m.PosEmbd.Rows)
		}
	}
	if bt != nil {
		// The driving state works on bt's buffers for the pass.
		if bt.b == nil || bt.b.hp != hp {
			bt.b = newBatch(hp)
			bt.b.tier = d.tier
		}
		own := d.batch
		d.batch = bt.b
		defer func() { d.batch = own }()
	}
	if d.batch == nil {
		d.batch = newBatch(hp)
		d.batch.tier = d.tier
	}
	b := d.batch
	if b.attendMulti == nil {
		b.multi = make([]*State, 0, maxMulti)
		b.attendMulti = func(lo, hi int) { attendHeadsOf(b.multi, hp.Heads, lo, hi) }
		b.prepareMulti = func(lo, hi int) {
			for j := lo; j < hi; j++ {
				st := b.multi[j]
				b.multiErr[j] = st.prepareAttention(b.opLayer, st.layer, st.pos)
			}
		}
		b.attendWhole = func(lo, hi int) {
			for j := lo; j < hi; j++ {
				st := b.multi[j]
				if b.multiErr[j] = st.prepareAttention(b.opLayer, st.layer, st.pos); b.multiErr[j] == nil {
					st.n = st.KV.Used(st.layer)
					st.attend(0, hp.Heads)
				}
			}
		}
		b.copyLogits = func(lo, hi int) {
			for i := lo; i < hi; i++ {
				copy(b.multi[i].Logits, row(b.logits, i, hp.Vocab))
			}
		}
	}
	e, qd, kd, vd, ad := hp.Embd, hp.QDim(), hp.KDim(), hp.VDim(), hp.Heads*hp.HeadDimV
	var saved [maxMulti]vectors
	for i, st := range states {
		saved[i] = vectors{st.x, st.xb, st.q, st.k, st.v, st.att}
	}
	defer func() {
		for i, st := range states {
			v := saved[i]
			st.x, st.xb, st.q, st.k, st.v, st.att = v.x, v.xb, v.q, v.k, v.v, v.att
		}
	}()
	for i, st := range states {
		for j, tok := range tokens[i] {
			st.x, st.xb = row(b.x, first[i]+j, e), row(b.xb, first[i]+j, e)
			if err := st.embed(tok, pos[i]+j); err != nil {
				return err
			}
		}
	}
	// rowVectors points st's vectors at row r of the batch.
	rowVectors := func(st *State, r int, qkv bool) {
		st.q, st.k, st.v, st.att = row(b.q, r, qd), row(b.k, r, kd), row(b.v, r, vd), row(b.att, r, ad)
		if qkv {
			st.splitQKV(row(b.qkv, r, qd+kd+vd))
		}
	}
	src := d.Source
	if src != nil {
		src.Begin(anyTrue(logits))
	}
	for l := range m.Blocks {
		ly, err := d.acquire(l, StageQKV)
		if err != nil {
			return err
		}
		b.opW, b.opB = ly.AttnNorm, ly.AttnNormB
		d.eachRow(opNorm, rows, e, ly)
		b.input(b.xb, e)
		fused := ly.QKV.Data != nil
		if fused {
			d.matMul(b.qkv, &ly.QKV, rows)
		} else {
			d.matMuls(rows, b.q, &ly.Q, b.k, &ly.K, b.v, &ly.V)
		}
		d.release(l, StageQKV)
		// The sequences of one token attend together: inline when all
		// of them are as little work as one that Forward does inline,
		// else the heads of all of them in one parallel job (while one
		// thread attends, the pool's others would wait); a run of
		// several tokens attends token after token (each to the
		// positions before it), as in ForwardBatch. Each head's
		// arithmetic is that of Forward.
		work, ones := 0, b.multi[:0]
		for i, st := range states {
			if len(tokens[i]) > 1 {
				for j := range tokens[i] {
					rowVectors(st, first[i]+j, fused)
					if err := st.KV.SetLen(pos[i] + j); err != nil {
						return err
					}
					if err := st.attendToken(ly, l, pos[i]+j); err != nil {
						return err
					}
				}
				continue
			}
			rowVectors(st, first[i], fused)
			st.layer, st.pos = l, pos[i] // as attendCache sets them
			// Each stores its key and value in a slot of its own.
			work += hp.Heads * (st.KV.Used(l) + 1) * (hp.HeadDimK + hp.HeadDimV)
			ones = append(ones, st)
		}
		// The sequences' keys and values are finished (rotation) and
		// stored on the threads when their heads attend there too. When
		// the sequences share out evenly among the threads, each is
		// stored and attended whole by one thread, in one job: its keys
		// and values are read whole rows at a time (a row holds every
		// head's slice), instead of each thread reading some heads'
		// slices of every row.
		if threads := d.pool.Threads(); work > inlineAttention && len(ones) >= threads && len(ones)%threads == 0 {
			b.multi, b.opLayer = ones, ly
			d.pool.Parallel(len(ones), b.attendWhole)
			b.opLayer = nil
			for j := range ones {
				if err := b.multiErr[j]; err != nil {
					b.multiErr = [maxMulti]error{}
					return err
				}
			}
		} else {
			b.multi, b.opLayer = ones, ly
			if work <= inlineAttention || len(ones) < 2 {
				b.prepareMulti(0, len(ones))
			} else {
				d.pool.Parallel(len(ones), b.prepareMulti)
			}
			b.opLayer = nil
			work = 0
			for j, st := range ones {
				if err := b.multiErr[j]; err != nil {
					b.multiErr = [maxMulti]error{}
					return err
				}
				st.n = st.KV.Used(l)
				work += hp.Heads * st.n * (hp.HeadDimK + hp.HeadDimV)
			}
			if work <= inlineAttention {
				for _, st := range ones {
					st.attend(0, hp.Heads)
				}
			} else {
				b.multi = ones
				d.pool.Parallel(len(ones)*hp.Heads, b.attendMulti)
			}
		}
		b.multi = ones[:0]
		if ly, err = d.acquire(l, StageOut); err != nil {
			return err
		}
		b.input(b.att, ad)
		d.matMul(b.xb, &ly.O, rows)
		d.release(l, StageOut)
		b.opB = ly.OB
		d.eachRow(opResidual, rows, e, ly)
		if err := d.feedForwardBatch(l, rows); err != nil {
			return err
		}
	}
	for i, st := range states {
		if err := st.KV.SetLen(pos[i] + len(tokens[i])); err != nil {
			return err
		}
	}
	if !anyTrue(logits) {
		return nil
	}
	// The LM head as one mat-mul over the last token of each sequence
	// that wants logits, into a buffer of a row of logits per sequence,
	// kept with the batch buffers.
	var want [maxMulti]*State
	n := 0
	for i, st := range states {
		if logits[i] {
			d.norm(row(b.xb, n, e), row(b.x, first[i]+len(tokens[i])-1, e), m.OutNorm, m.OutNormB)
			want[n] = st
			n++
		}
	}
	b.input(b.xb, e)
	if need := n * hp.Vocab; len(b.logits) < need {
		b.logits = make([]float32, need)
	}
	if src == nil || src.HeadChunks() == 0 {
		d.matMul(b.logits, &m.Output, n)
		b.multi = append(b.multi[:0], want[:n]...)
		d.pool.Parallel(n, b.copyLogits)
		b.multi = b.multi[:0]
		return nil
	}
	for c := range src.HeadChunks() {
		t, row0, err := src.Head(c)
		if err != nil {
			return err
		}
		d.matMul(b.logits, t, n)
		src.ReleaseHead(c)
		for i, st := range want[:n] {
			copy(st.Logits[row0:row0+t.Rows], row(b.logits, i, t.Rows))
		}
	}
	return nil
}

func anyTrue(v []bool) bool {
	for _, b := range v {
		if b {
			return true
		}
	}
	return false
}

// attendHeadsOf runs heads [lo, hi) of the sequences' heads numbered one
// sequence after another, heads per sequence.
func attendHeadsOf(states []*State, heads, lo, hi int) {
	for j := lo; j < hi; {
		st, h := states[j/heads], j%heads
		end := min(heads, h+hi-j)
		st.attend(h, end)
		j += end - h
	}
}
