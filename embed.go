package qsf

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/qsf-llm/qsf/tokenizer"
)

// Embed returns a sentence embedding of text: the mean of its tokens'
// final hidden states (the output-normalized vectors the LM head reads),
// of Info().Embedding values, not normalized. It runs text (with BOS as
// the vocabulary asks) through the session's KV cache one token at a time
// and leaves the session empty, as after Reset.
func (s *Session) Embed(ctx context.Context, text string) ([]float32, error) {
	if s.closed {
		return nil, ErrClosed
	}
	ids := s.m.tok.Encode(text, tokenizer.EncodeOptions{AddSpecial: true})
	if len(ids) == 0 {
		return nil, errors.New("qsf: Embed of an empty text")
	}
	s.Reset()
	defer s.Reset()
	if err := s.m.acquire(); err != nil {
		return nil, err
	}
	defer s.m.release()
	if !s.state.KV.Evicts() && len(ids) > s.state.KV.Capacity() {
		return nil, fmt.Errorf("%w: %d tokens, room for %d", ErrContextFull, len(ids), s.state.KV.Capacity())
	}
	n := s.m.net.Hparams.Embd
	sum := make([]float64, n)
	h := make([]float32, n)
	for pos, id := range ids {
		if err := s.interrupted(ctx); err != nil {
			return nil, err
		}
		s.m.lockPass()
		err := s.state.Forward(id, pos, false)
		s.m.unlockPass()
		if err != nil {
			return nil, fmt.Errorf("qsf: %w", err)
		}
		s.state.Hidden(h)
		for i, v := range h {
			sum[i] += float64(v)
		}
	}
	out := make([]float32, n)
	for i, v := range sum {
		out[i] = float32(v / float64(len(ids)))
	}
	return out, nil
}

// Tokens returns the tokens the session's KV cache holds, in order: what
// a later Chat or Complete call can reuse.
func (s *Session) Tokens() []int { return slices.Clone(s.history) }

// Complete generates a continuation of prompt as a text of its own, not a
// continuation of the session's conversation: the result is what Reset
// followed by Generate gives, but the longest token prefix the KV cache
// shares with prompt (with BOS as the vocabulary asks) is kept instead of
// evaluated again, as Chat does. ChatResult.CachedTokens counts it.
func (s *Session) Complete(ctx context.Context, prompt string, opts GenerateOptions, fn func(Token) error) (ChatResult, error) {
	if s.closed || s.m.closed.Load() {
		return ChatResult{}, ErrClosed
	}
	if err := opts.Sampling.Validate(); err != nil {
		return ChatResult{}, err
	}
	ids := s.m.tok.Encode(prompt, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: opts.ParseSpecial})
	if len(ids) == 0 {
		return ChatResult{}, errors.New("qsf: Complete with an empty prompt")
	}
	keep := s.reuse(ids)
	s.messages = nil
	res, err := s.generate(ctx, ids[keep:], opts, fn)
	return ChatResult{Result: res, CachedTokens: keep}, err
}

// TokenLogprob is a token id and its log-probability.
type TokenLogprob struct {
	ID      int
	Logprob float32
}

// logprobs returns the log-probability of id under logits (a softmax at
// temperature 1; -Inf logits, such as tokens a grammar forbids, have
// probability 0) and the top most likely tokens, best first (the lower
// id first on a tie).
func logprobs(logits []float32, id, top int) (float32, []TokenLogprob) {
	mx := float32(math.Inf(-1))
	for _, l := range logits {
		mx = max(mx, l)
	}
	var sum float64
	for _, l := range logits {
		sum += math.Exp(float64(l - mx))
	}
	lse := float64(mx) + math.Log(sum)
	lp := func(l float32) float32 { return float32(float64(l) - lse) }
	var best []TokenLogprob
	if top > 0 {
		best = make([]TokenLogprob, 0, top+1)
		for i, l := range logits {
			if len(best) == top && l <= best[top-1].Logprob {
				continue
			}
			at := len(best)
			for at > 0 && l > best[at-1].Logprob {
				at--
			}
			best = slices.Insert(best, at, TokenLogprob{ID: i, Logprob: l})
			if len(best) > top {
				best = best[:top]
			}
		}
		for i := range best {
			best[i].Logprob = lp(best[i].Logprob)
		}
	}
	if id < 0 || id >= len(logits) {
		return float32(math.Inf(-1)), best
	}
	return lp(logits[id]), best
}
