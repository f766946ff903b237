package model

import (
	"errors"
	"fmt"

	"github.com/qsf-llm/qsf/kvcache"
)

// maxMulti is the most sequences ForwardMulti evaluates in one pass.
const maxMulti = 16

// ForwardMulti runs one token for each of several sequences in one pass:
// tokens[i] at position states[i].KV.Len() of states[i]. Each weight
// matrix is read once for all of them (a mat-mul over one row per
// sequence) while each sequence attends to its own KV cache; with logits,
// each state's Logits holds its next-token logits. The results equal
// Forward on each state alone, bit for bit (continuous batching).
//
// Under layer streaming (a weight Source on every state) the weights of
// the pass come from the first state's Source, read once for all the
// sequences; the others' Sources only provide their embedding rows. The
// pass keeps its batch buffers on the Go heap, outside the streaming
// arena.
//
// The states must be distinct states of one Model. States with a cache
// that evicts, a mixture of experts, the bitnet architecture, or a mix of
// streaming and resident states are run one after another with Forward.
func ForwardMulti(states []*State, tokens []int, logits bool) error {
	if len(states) != len(tokens) {
		return fmt.Errorf("model: ForwardMulti of %d states and %d tokens", len(states), len(tokens))
	}
	if len(states) == 0 {
		return nil
	}
	m := states[0].m
	for i, st := range states {
		if st.m != m {
			return errors.New("model: ForwardMulti of states of different models")
		}
		for _, o := range states[:i] {
			if o == st {
				return errors.New("model: ForwardMulti of one state twice")
			}
		}
	}
	single := len(states) == 1 || m.isBitNet() || m.Hparams.MoE.Experts > 0
	for _, st := range states {
		single = single || (st.Source == nil) != (states[0].Source == nil) || st.Experts != nil || st.KV.Evicts()
	}
	if single {
		for i, st := range states {
			if err := st.Forward(tokens[i], st.KV.Len(), logits); err != nil {
				return err
			}
		}
		return nil
	}
	for start := 0; start < len(states); start += maxMulti {
		end := min(start+maxMulti, len(states))
		if err := forwardMulti(states[start:end], tokens[start:end], logits); err != nil {
			return err
		}
	}
	return nil
}

// vectors are a state's single-token buffers, which forwardMulti points
// at rows of the shared batch while it runs.
type vectors struct{ x, xb, q, k, v, att []float32 }

func forwardMulti(states []*State, tokens []int, logits bool) error {
	d := states[0] // its batch buffers and worker pool serve every state
	m := d.m
	hp := &m.Hparams
	n := len(states)
	for i, st := range states {
		tok, pos := tokens[i], st.KV.Len()
		if tok < 0 || tok >= hp.Vocab {
			return fmt.Errorf("model: token %d outside vocabulary of %d", tok, hp.Vocab)
		}
		if pos >= st.KV.Capacity() {
			return fmt.Errorf("%w: position %d, capacity %d", kvcache.ErrFull, pos, st.KV.Capacity())
		}
		if hp.LearnedPos && pos >= m.PosEmbd.Rows {
			return fmt.Errorf("%w: position %d beyond the %d learned positions", kvcache.ErrFull, pos, m.PosEmbd.Rows)
		}
	}
	if d.batch == nil {
		d.batch = newBatch(hp)
		d.batch.tier = d.tier
	}
	b := d.batch
	if b.attendMulti == nil {
		b.attendMulti = func(lo, hi int) { attendHeadsOf(b.multi, hp.Heads, lo, hi) }
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
		st.x, st.xb = row(b.x, i, e), row(b.xb, i, e)
		if err := st.embed(tokens[i], st.KV.Len()); err != nil {
			return err
		}
	}
	src := d.Source
	if src != nil {
		src.Begin(logits)
	}
	for l := range m.Blocks {
		ly, err := d.acquire(l, StageQKV)
		if err != nil {
			return err
		}
		for i := range n {
			d.norm(row(b.xb, i, e), row(b.x, i, e), ly.AttnNorm, ly.AttnNormB)
		}
		b.input(b.xb, e)
		if ly.QKV.Data != nil {
			d.matMul(b.qkv, &ly.QKV, n)
		} else {
			d.matMul(b.q, &ly.Q, n)
			d.matMul(b.k, &ly.K, n)
			d.matMul(b.v, &ly.V, n)
		}
		d.release(l, StageQKV)
		work := 0
		for i, st := range states {
			st.q, st.k, st.v, st.att = row(b.q, i, qd), row(b.k, i, kd), row(b.v, i, vd), row(b.att, i, ad)
			if ly.QKV.Data != nil {
				st.splitQKV(row(b.qkv, i, qd+kd+vd))
			}
			if err := st.prepareAttention(ly, l, st.KV.Len()); err != nil {
				return err
			}
			work += st.attentionWork()
		}
		// The heads of all the sequences attend in one parallel job
		// (each head's arithmetic is the same as alone).
		if work <= inlineAttention {
			for _, st := range states {
				st.attend(0, hp.Heads)
			}
		} else {
			b.multi = states
			d.pool.Parallel(n*hp.Heads, b.attendMulti)
			b.multi = nil
		}
		if ly, err = d.acquire(l, StageOut); err != nil {
			return err
		}
		b.input(b.att, ad)
		d.matMul(b.xb, &ly.O, n)
		d.release(l, StageOut)
		for i := range n {
			addBias(row(b.xb, i, e), ly.OB)
			add(row(b.x, i, e), row(b.xb, i, e))
		}
		if err := d.feedForwardBatch(l, n); err != nil {
			return err
		}
	}
	for _, st := range states {
		if err := st.KV.SetLen(st.KV.Len() + 1); err != nil {
			return err
		}
	}
	if logits {
		// The LM head as one mat-mul too, into a buffer of a row of
		// logits per sequence, kept by the driving state.
		for i := range n {
			d.norm(row(b.xb, i, e), row(b.x, i, e), m.OutNorm, m.OutNormB)
		}
		b.input(b.xb, e)
		if need := maxMulti * hp.Vocab; len(d.multiLogits) < need {
			d.multiLogits = make([]float32, need)
		}
		if src == nil || src.HeadChunks() == 0 {
			d.matMul(d.multiLogits, &m.Output, n)
			for i, st := range states {
				copy(st.Logits, row(d.multiLogits, i, hp.Vocab))
			}
			return nil
		}
		for c := range src.HeadChunks() {
			t, row0, err := src.Head(c)
			if err != nil {
				return err
			}
			d.matMul(d.multiLogits, t, n)
			src.ReleaseHead(c)
			for i, st := range states {
				copy(st.Logits[row0:row0+t.Rows], row(d.multiLogits, i, t.Rows))
			}
		}
	}
	return nil
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
