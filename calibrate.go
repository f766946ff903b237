package qsf

import (
	"context"
	"errors"
	"fmt"

	"github.com/qsf-llm/qsf/model"
)

// ErrCalibrationText is returned by Model.ActivationEnergy for a text too
// short to calibrate with (fewer than two tokens).
var ErrCalibrationText = errors.New("qsf: calibration text too short")

// CalibrationOptions control Model.ActivationEnergy.
type CalibrationOptions struct {
	// Context is the chunk length in tokens (default 128, at most the
	// session context length). Each chunk is evaluated from position 0
	// with its first token replaced by BOS, as Perplexity does.
	Context int
}

// ActivationEnergy runs the model over text and returns, for every matrix
// the forward pass multiplies (keyed by tensor name, e.g.
// "blk.0.attn_q.weight"), the mean over the evaluated tokens of the
// squared input of each column: the importance a quantizer gives to the
// columns of that matrix (llama.cpp's importance matrix). It also returns
// the number of tokens evaluated.
func (m *Model) ActivationEnergy(ctx context.Context, text string, opts CalibrationOptions) (map[string][]float32, int, error) {
	n := opts.Context
	if n <= 0 {
		n = 128
	}
	n = min(n, m.ctx)
	tokens := m.Tokenize(text, TokenizeOptions{})
	if len(tokens) < 2 {
		return nil, 0, fmt.Errorf("%w: %d tokens", ErrCalibrationText, len(tokens))
	}
	s, err := m.NewSession()
	if err != nil {
		return nil, 0, err
	}
	defer s.Close()
	sums := map[string][]float64{}
	s.state.Observe = func(w *model.Tensor, x []float32) {
		acc := sums[w.Name]
		if acc == nil {
			acc = make([]float64, len(x))
			sums[w.Name] = acc
		}
		if len(acc) != len(x) {
			return // a tensor name reused with another width: keep the first
		}
		for j, v := range x {
			acc[j] += float64(float64(v) * float64(v))
		}
	}
	defer func() { s.state.Observe = nil }()
	evaluated := 0
	chunk := make([]int, 0, n)
	for lo := 0; lo < len(tokens); lo += n {
		chunk = append(chunk[:0], tokens[lo:min(lo+n, len(tokens))]...)
		if bos := m.BOS(); bos >= 0 {
			chunk[0] = bos
		}
		s.Reset()
		if err := s.feed(ctx, chunk, func(int, []float32) error { return nil }); err != nil {
			return nil, 0, err
		}
		evaluated += len(chunk)
	}
	out := make(map[string][]float32, len(sums))
	for name, acc := range sums {
		e := make([]float32, len(acc))
		for j, v := range acc {
			e[j] = float32(v / float64(evaluated))
		}
		out[name] = e
	}
	return out, evaluated, nil
}
