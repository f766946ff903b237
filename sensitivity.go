package qsf

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/qsf-llm/qsf/model"
	"github.com/qsf-llm/qsf/quant"
)

// ErrNoMatrix is returned by Model.MatrixSensitivity for a name that is
// not a matrix of the model.
var ErrNoMatrix = errors.New("qsf: no such matrix")

// SensitivityOptions control Model.MatrixSensitivity.
type SensitivityOptions struct {
	// Context is the chunk length in tokens (default 128), as in
	// CalibrationOptions.
	Context int
	// MaxTokens bounds the tokens of text evaluated (default 2048): the
	// base distributions of all of them are kept in memory.
	MaxTokens int
}

// MatrixSensitivity measures how much each named matrix matters to the
// model's output: it runs the model over text (in chunks, as
// ActivationEnergy does), then, for each name, replaces that one matrix by
// the rows replace returns (of type t, laid out as the file stores them)
// and returns the mean KL divergence of the next-token distributions from
// those of the unchanged model over the same tokens, by name, with the
// number of tokens scored. A quantizer spends its bits where this is
// large.
//
// The matrices are swapped in place and restored before it returns, so no
// other session of the model may run meanwhile. The model must be
// resident (not streamed).
func (m *Model) MatrixSensitivity(ctx context.Context, text string, opts SensitivityOptions, names []string, replace func(name string) (quant.Type, []byte, error)) (map[string]float64, int, error) {
	n := opts.Context
	if n <= 0 {
		n = 128
	}
	n = min(n, m.ctx)
	maxTok := opts.MaxTokens
	if maxTok <= 0 {
		maxTok = 2048
	}
	tokens := m.Tokenize(text, TokenizeOptions{})
	tokens = tokens[:min(len(tokens), maxTok)]
	if len(tokens) < 2 {
		return nil, 0, fmt.Errorf("%w: %d tokens", ErrCalibrationText, len(tokens))
	}
	w := m.net.Weights
	if w == nil {
		return nil, 0, errors.New("qsf: MatrixSensitivity needs a resident model")
	}
	vocab := m.net.Vocab
	base := make([]float64, len(tokens)*vocab)
	lp := make([]float64, vocab)
	run := func(each func(k int, logits []float32)) error {
		s, err := m.NewSession()
		if err != nil {
			return err
		}
		defer s.Close()
		chunk := make([]int, 0, n)
		for lo := 0; lo < len(tokens); lo += n {
			chunk = append(chunk[:0], tokens[lo:min(lo+n, len(tokens))]...)
			if bos := m.BOS(); bos >= 0 {
				chunk[0] = bos
			}
			s.Reset()
			if err := s.feed(ctx, chunk, func(i int, logits []float32) error {
				each(lo+i, logits)
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	}
	if err := run(func(k int, logits []float32) { logSoftmaxAll(base[k*vocab:(k+1)*vocab], logits) }); err != nil {
		return nil, 0, err
	}
	out := make(map[string]float64, len(names))
	for _, name := range names {
		ts := matricesNamed(w, name)
		if len(ts) == 0 {
			return nil, 0, fmt.Errorf("%w: %s", ErrNoMatrix, name)
		}
		typ, data, err := replace(name)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", name, err)
		}
		rb, err := quant.RowBytes(typ, ts[0].Cols)
		if err != nil || len(data) != rb*ts[0].Rows {
			return nil, 0, fmt.Errorf("%s: %d bytes of %v for %d×%d (%v)", name, len(data), typ, ts[0].Rows, ts[0].Cols, err)
		}
		saved := *ts[0]
		for _, t := range ts {
			t.Type, t.Data = typ, data
		}
		var kl float64
		err = run(func(k int, logits []float32) {
			logSoftmaxAll(lp, logits)
			b := base[k*vocab : (k+1)*vocab]
			for j, v := range b {
				if p := math.Exp(v); p > 0 {
					kl += float64(p * (v - lp[j]))
				}
			}
		})
		for _, t := range ts {
			t.Type, t.Data = saved.Type, saved.Data
		}
		if err != nil {
			return nil, 0, err
		}
		out[name] = kl / float64(len(tokens))
	}
	return out, len(tokens), nil
}

// matricesNamed returns every matrix of w called name (the token
// embedding twice when the LM head is tied to it).
func matricesNamed(w *model.Weights, name string) []*model.Tensor {
	var ts []*model.Tensor
	add := func(t *model.Tensor) {
		if t.Data != nil && t.Name == name {
			ts = append(ts, t)
		}
	}
	add(&w.TokenEmbd)
	add(&w.Output)
	for i := range w.Blocks {
		b := &w.Blocks[i]
		for _, t := range []*model.Tensor{&b.Q, &b.K, &b.V, &b.QKV, &b.O, &b.Gate, &b.Up, &b.GateUp, &b.Down} {
			add(t)
		}
	}
	return ts
}
