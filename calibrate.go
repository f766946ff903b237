package qsf

import (
	"context"
	"errors"
	"fmt"
	"math"

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
	sums := map[string][]float64{}
	observe := func(w *model.Tensor, x []float32) {
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
	evaluated, err := m.observeText(ctx, text, opts, observe, nil)
	if err != nil {
		return nil, 0, err
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

// observeText runs the model over text in chunks of opts.Context tokens,
// each evaluated from position 0 with its first token replaced by BOS,
// calling observe with every dense matrix's input and observeLayer with
// the residual stream between layers (either may be nil), and returns the
// number of tokens evaluated.
func (m *Model) observeText(ctx context.Context, text string, opts CalibrationOptions, observe func(w *model.Tensor, x []float32), observeLayer func(l int, x []float32)) (int, error) {
	n := opts.Context
	if n <= 0 {
		n = 128
	}
	n = min(n, m.ctx)
	tokens := m.Tokenize(text, TokenizeOptions{})
	if len(tokens) < 2 {
		return 0, fmt.Errorf("%w: %d tokens", ErrCalibrationText, len(tokens))
	}
	s, err := m.NewSession()
	if err != nil {
		return 0, err
	}
	defer s.Close()
	s.state.Observe, s.state.ObserveLayer = observe, observeLayer
	defer func() { s.state.Observe, s.state.ObserveLayer = nil, nil }()
	evaluated := 0
	chunk := make([]int, 0, n)
	for lo := 0; lo < len(tokens); lo += n {
		chunk = append(chunk[:0], tokens[lo:min(lo+n, len(tokens))]...)
		if bos := m.BOS(); bos >= 0 {
			chunk[0] = bos
		}
		s.Reset()
		if err := s.feed(ctx, chunk, func(int, []float32) error { return nil }); err != nil {
			return 0, err
		}
		evaluated += len(chunk)
	}
	return evaluated, nil
}

// ActivationGram runs the model over text as ActivationEnergy does and
// returns, for every matrix the forward pass multiplies (keyed by tensor
// name), the mean over the evaluated tokens of x·xᵀ of its float32 input
// x: a cols×cols row-major matrix whose diagonal is ActivationEnergy's
// energy. A quantizer that feeds each column's rounding error forward to
// the columns not yet rounded (GPTQ) needs this second moment, not only
// its diagonal. It holds cols² float64 values per matrix, so it is meant
// for models whose rows are at most a few thousand wide.
func (m *Model) ActivationGram(ctx context.Context, text string, opts CalibrationOptions) (map[string][]float64, int, error) {
	sums := map[string][]float64{}
	widths := map[string]int{}
	observe := func(w *model.Tensor, x []float32) {
		n := len(x)
		acc := sums[w.Name]
		if acc == nil {
			acc = make([]float64, n*n)
			sums[w.Name], widths[w.Name] = acc, n
		}
		if widths[w.Name] != n {
			return // a tensor name reused with another width: keep the first
		}
		for i, xi := range x {
			if xi == 0 {
				continue
			}
			a, row := float64(xi), acc[i*n:(i+1)*n]
			for j := i; j < n; j++ {
				row[j] += float64(a * float64(x[j]))
			}
		}
	}
	evaluated, err := m.observeText(ctx, text, opts, observe, nil)
	if err != nil {
		return nil, 0, err
	}
	for name, acc := range sums {
		n := widths[name]
		for i := 0; i < n; i++ {
			for j := i; j < n; j++ {
				v := acc[i*n+j] / float64(evaluated)
				acc[i*n+j], acc[j*n+i] = v, v
			}
		}
	}
	return sums, evaluated, nil
}

// LayerImportance runs the model over text as ActivationEnergy does and
// returns, for every layer, how much it changes its input: the mean over
// the evaluated tokens of 1 − cos(x_in, x_out), where x_in is the residual
// stream entering the layer and x_out the one leaving it (0 for a layer
// that leaves the direction of every token's state unchanged, up to 2).
// A layer scoring near 0 is the first candidate for layer skipping; QSF
// files store the score in their layer index (docs/FORMAT.md). Tokens
// whose state is zero on either side are not counted for that layer. It
// also returns the number of tokens evaluated.
func (m *Model) LayerImportance(ctx context.Context, text string, opts CalibrationOptions) ([]float64, int, error) {
	n := m.net.Hparams.Layers
	sums := make([]float64, n)
	counts := make([]int, n)
	var prev []float64
	observeLayer := func(l int, x []float32) {
		if prev == nil {
			prev = make([]float64, len(x))
		}
		if l > 0 && l <= n && len(x) == len(prev) {
			var ab, aa, bb float64
			for i, v := range x {
				a, b := prev[i], float64(v)
				ab += float64(a * b)
				aa += float64(a * a)
				bb += float64(b * b)
			}
			if aa > 0 && bb > 0 {
				sums[l-1] += 1 - ab/math.Sqrt(aa*bb)
				counts[l-1]++
			}
		}
		if len(x) == len(prev) {
			for i, v := range x {
				prev[i] = float64(v)
			}
		}
	}
	evaluated, err := m.observeText(ctx, text, opts, nil, observeLayer)
	if err != nil {
		return nil, 0, err
	}
	for l := range sums {
		if counts[l] > 0 {
			sums[l] /= float64(counts[l])
		}
	}
	return sums, evaluated, nil
}
