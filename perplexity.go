package qsf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
)

// PerplexityOptions control Model.Perplexity.
type PerplexityOptions struct {
	// Context is the chunk length in tokens (default 128). It may exceed
	// the session context length only when the model was loaded with a
	// KV eviction policy (Config.KVEviction): the cache then holds the
	// last (window) or the most attended (h2o) positions of a chunk.
	Context int

	// SaveLogProbs, when not nil, receives the log-probabilities of every
	// scored position (about 2 bytes per vocabulary entry and token), for
	// a later run of another model (a quantization of this one) on the
	// same text with KLBase.
	SaveLogProbs io.Writer

	// KLBase, when not nil, is a file SaveLogProbs wrote for a base model
	// on the same text and chunk length; the result then compares this
	// model with it (PerplexityResult.KL). A file for another text,
	// tokenizer or vocabulary, or a damaged one, gives ErrLogProbs.
	KLBase io.Reader
}

// PerplexityResult is the outcome of Model.Perplexity.
type PerplexityResult struct {
	PPL     float64   // exp(mean negative log-likelihood)
	StdErr  float64   // its standard error, as llama-perplexity prints after ±
	Chunks  int       // chunks evaluated
	Scored  int       // tokens scored
	Running []float64 // PPL after each chunk
	KL      *KLResult // with PerplexityOptions.KLBase: the comparison with the base model
}

// Perplexity measures how well the model predicts text with llama.cpp's
// llama-perplexity method, so the figures compare: the text is tokenized
// once (with BOS), cut into non-overlapping chunks of opts.Context tokens,
// the first token of each chunk is replaced by BOS, each chunk is evaluated
// from position 0, and only the second half of each chunk is scored.
// progress, if non-nil, is called after every chunk. With opts.KLBase it
// also compares the model's predictions with a base model's, as
// llama-perplexity --kl-divergence does (PerplexityResult.KL).
func (m *Model) Perplexity(ctx context.Context, text string, opts PerplexityOptions, progress func(chunk, chunks int, running float64)) (PerplexityResult, error) {
	var res PerplexityResult
	n := opts.Context
	if n <= 0 {
		n = 128
	}
	if n > m.ctx && m.kv.Policy == nil {
		return res, fmt.Errorf("%w: perplexity context %d exceeds the session context %d (set Config.KVEviction to slide the cache)", ErrContextFull, n, m.ctx)
	}
	if n < 4 {
		return res, errors.New("qsf: perplexity context must be at least 4 tokens")
	}
	tokens := m.Tokenize(text, TokenizeOptions{})
	chunks := len(tokens) / n
	var err error
	if chunks == 0 {
		return res, fmt.Errorf("qsf: text has %d tokens, fewer than one chunk of %d", len(tokens), n)
	}
	var save *logProbsWriter
	var base *logProbsReader
	var kl klAccumulator
	vocab := m.net.Hparams.Vocab
	if opts.SaveLogProbs != nil {
		if save, err = newLogProbsWriter(opts.SaveLogProbs, vocab, n, chunks, tokens); err != nil {
			return res, err
		}
	}
	if opts.KLBase != nil {
		if base, err = newLogProbsReader(opts.KLBase, vocab, n, chunks, tokens); err != nil {
			return res, err
		}
	}
	var lp []float64
	if save != nil || base != nil {
		lp = make([]float64, vocab)
	}
	s, err := m.NewSession()
	if err != nil {
		return res, err
	}
	defer s.Close()
	s.state.BatchOrder = true // llama-perplexity evaluates each chunk as one batch

	first := n / 2
	var nll, nll2 float64
	chunk := make([]int, n)
	for c := 0; c < chunks; c++ {
		copy(chunk, tokens[c*n:(c+1)*n])
		if bos := m.BOS(); bos >= 0 {
			chunk[0] = bos
		}
		s.Reset()
		err = s.feed(ctx, chunk, func(i int, logits []float32) error {
			if i < first || i >= n-1 {
				return nil
			}
			v := -logSoftmax(logits, chunk[i+1])
			nll += v
			nll2 += float64(v * v)
			res.Scored++
			if lp == nil {
				return nil
			}
			logSoftmaxAll(lp, logits)
			if save != nil {
				if err := save.position(lp); err != nil {
					return fmt.Errorf("qsf: saving log-probabilities: %w", err)
				}
			}
			if base != nil {
				b, err := base.position()
				if err != nil {
					return err
				}
				kl.add(b, lp, chunk[i+1])
			}
			return nil
		})
		if err != nil {
			return res, err
		}
		res.Chunks++
		running := math.Exp(nll / float64(res.Scored))
		res.Running = append(res.Running, running)
		if progress != nil {
			progress(c+1, chunks, running)
		}
	}
	if save != nil {
		if err := save.close(); err != nil {
			return res, fmt.Errorf("qsf: saving log-probabilities: %w", err)
		}
	}
	if base != nil {
		if err := base.close(); err != nil {
			return res, err
		}
		res.KL = kl.result()
	}
	mean := nll / float64(res.Scored)
	res.PPL = math.Exp(mean)
	if v := nll2/float64(res.Scored) - float64(mean*mean); v > 0 && res.Scored > 1 {
		res.StdErr = res.PPL * math.Sqrt(v/float64(res.Scored-1))
	}
	return res, nil
}

// logSoftmax returns log(softmax(logits)[tok]), computed in float64.
func logSoftmax(logits []float32, tok int) float64 {
	mx := logits[0]
	for _, v := range logits {
		mx = max(mx, v)
	}
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v - mx))
	}
	return float64(logits[tok]-mx) - math.Log(sum)
}
