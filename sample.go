package qsf

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/qsf-llm/qsf/kernels"
)

// SamplerOptions choose the next token from the logits. The zero value is
// greedy decoding: always the most likely token (the lowest id on a tie).
//
// The filters run in llama.cpp's order: repetition penalties, top-k,
// top-p, min-p, temperature, then a random draw.
type SamplerOptions struct {
	// Temperature divides the logits before the draw. 0 (or less) means
	// greedy decoding and disables every other option but the penalties.
	Temperature float32
	// TopK keeps the K most likely tokens (0 = all).
	TopK int
	// TopP keeps the smallest set of most likely tokens whose
	// probabilities add up to at least P (0 or 1 = all).
	TopP float32
	// MinP drops tokens less likely than MinP times the most likely one
	// (0 = off).
	MinP float32
	// RepeatPenalty divides positive (multiplies negative) logits of tokens
	// seen in the last RepeatLastN tokens (1 or 0 = off).
	RepeatPenalty float32
	// FrequencyPenalty subtracts count×penalty from the logit of each
	// token seen in the window.
	FrequencyPenalty float32
	// PresencePenalty subtracts penalty from the logit of each token seen
	// in the window at least once.
	PresencePenalty float32
	// RepeatLastN is the penalty window in tokens (0 = 64; -1 = the whole
	// history).
	RepeatLastN int
	// Seed makes the random draws reproducible. A negative seed draws one
	// from the clock.
	Seed int64
}

// ErrInvalidOption is wrapped by the errors of SamplerOptions.Validate and
// of Generate for an option out of range.
var ErrInvalidOption = errors.New("qsf: invalid option")

// Validate reports the first option out of range: a NaN or infinite
// value, TopK or RepeatPenalty below 0, TopP or MinP outside [0, 1], or
// RepeatLastN below -1. (A Temperature of 0 or less means greedy decoding;
// negative frequency and presence penalties favour repetition.) Generate
// refuses options Validate refuses; a Sampler itself treats out-of-range
// values as their nearest meaningful value.
func (o SamplerOptions) Validate() error {
	floats := []struct {
		name   string
		v      float32
		lo, hi float64
	}{
		{"temperature", o.Temperature, math.Inf(-1), math.Inf(1)},
		{"top-p", o.TopP, 0, 1},
		{"min-p", o.MinP, 0, 1},
		{"repeat penalty", o.RepeatPenalty, 0, math.Inf(1)},
		{"frequency penalty", o.FrequencyPenalty, math.Inf(-1), math.Inf(1)},
		{"presence penalty", o.PresencePenalty, math.Inf(-1), math.Inf(1)},
	}
	for _, f := range floats {
		v := float64(f.v)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: %s %v", ErrInvalidOption, f.name, f.v)
		}
		if v < f.lo || v > f.hi {
			return fmt.Errorf("%w: %s %v is outside [%v, %v]", ErrInvalidOption, f.name, f.v, f.lo, f.hi)
		}
	}
	if o.TopK < 0 {
		return fmt.Errorf("%w: top-k %d is negative (0 = off)", ErrInvalidOption, o.TopK)
	}
	if o.RepeatLastN < -1 {
		return fmt.Errorf("%w: repeat-last-n %d is below -1 (-1 = the whole history)", ErrInvalidOption, o.RepeatLastN)
	}
	return nil
}

// Sampler draws tokens according to SamplerOptions. It remembers the
// tokens it was told about (Accept) for the repetition penalties and owns
// its random number generator, so one Sampler serves one sequence.
type Sampler struct {
	opts    SamplerOptions
	rng     *rand.Rand
	history []int
	cands   []candidate
	counts  map[int]int
}

type candidate struct {
	id    int
	logit float32
	p     float32
}

// NewSampler returns a sampler with the given options.
func NewSampler(opts SamplerOptions) *Sampler {
	seed := uint64(opts.Seed)
	if opts.Seed < 0 {
		seed = uint64(time.Now().UnixNano())
	}
	return &Sampler{
		opts:   opts,
		rng:    rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)),
		counts: map[int]int{},
	}
}

// Accept records that id was added to the sequence (a prompt token or a
// sampled one), for the repetition penalties.
func (s *Sampler) Accept(id int) { s.history = append(s.history, id) }

// Reset forgets the history.
func (s *Sampler) Reset() { s.history = s.history[:0] }

// Sample returns the next token, or -1 when logits is empty. It does not
// modify logits.
func (s *Sampler) Sample(logits []float32) int {
	if len(logits) == 0 {
		return -1
	}
	o := &s.opts
	penalize := o.RepeatPenalty != 0 && o.RepeatPenalty != 1 || o.FrequencyPenalty != 0 || o.PresencePenalty != 0
	if o.Temperature <= 0 && !penalize {
		return argmax(logits)
	}

	// Candidates sorted by logit, best first.
	s.cands = s.cands[:0]
	for id, l := range logits {
		s.cands = append(s.cands, candidate{id: id, logit: l})
	}
	if penalize {
		s.applyPenalties()
	}
	if o.Temperature <= 0 {
		best := 0
		for i, c := range s.cands {
			if c.logit > s.cands[best].logit {
				best = i
			}
		}
		return s.cands[best].id
	}
	c := s.cands
	slices.SortStableFunc(c, func(a, b candidate) int {
		switch {
		case a.logit > b.logit:
			return -1
		case a.logit < b.logit:
			return 1
		}
		return 0
	})
	if o.TopK > 0 && o.TopK < len(c) {
		c = c[:o.TopK]
	}
	if o.TopP > 0 && o.TopP < 1 {
		softmaxCands(c, 1)
		var cum float32
		for i := range c {
			cum += c[i].p
			if cum >= o.TopP {
				c = c[:i+1]
				break
			}
		}
	}
	if o.MinP > 0 {
		softmaxCands(c, 1)
		thresh := c[0].p * o.MinP
		n := 1
		for n < len(c) && c[n].p >= thresh {
			n++
		}
		c = c[:n]
	}
	softmaxCands(c, o.Temperature)
	r := s.rng.Float32()
	var cum float32
	for _, cand := range c {
		cum += cand.p
		if r < cum {
			return cand.id
		}
	}
	return c[len(c)-1].id
}

// applyPenalties lowers the logits of recently seen tokens.
func (s *Sampler) applyPenalties() {
	o := &s.opts
	window := s.history
	n := o.RepeatLastN
	if n == 0 {
		n = 64
	}
	if n > 0 && len(window) > n {
		window = window[len(window)-n:]
	}
	clear(s.counts)
	for _, id := range window {
		s.counts[id]++
	}
	for id, count := range s.counts {
		if id < 0 || id >= len(s.cands) {
			continue
		}
		l := &s.cands[id].logit
		if o.RepeatPenalty != 0 && o.RepeatPenalty != 1 {
			if *l <= 0 {
				*l *= o.RepeatPenalty
			} else {
				*l /= o.RepeatPenalty
			}
		}
		*l -= float32(float32(count)*o.FrequencyPenalty) + o.PresencePenalty
	}
}

// softmaxCands fills p from logit/temp for candidates sorted best first.
func softmaxCands(c []candidate, temp float32) {
	mx := c[0].logit / temp
	var sum float64
	for i := range c {
		e := math.Exp(float64(c[i].logit/temp - mx))
		c[i].p = float32(e)
		sum += e
	}
	for i := range c {
		c[i].p = float32(float64(c[i].p) / sum)
	}
}

// argmax returns the index of the largest value, the lowest on a tie
// (NaNs are passed over, but a NaN at 0 is the answer: argmaxScalar's
// result), with the vector code of the kernels' tier (a greedy pick is
// serial work between the batched steps of a Batcher, once per sequence);
// 0 for no values.
func argmax(x []float32) int { return max(kernels.ArgmaxF32(x), 0) }

// argmaxScalar is argmax one value after another.
func argmaxScalar(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// Sample picks one token from logits with a fresh Sampler, or returns -1
// when logits is empty (nil): a convenience for one-off draws. Use a Sampler to keep penalty history and a random
// stream across tokens.
func Sample(logits []float32, opts SamplerOptions) int {
	return NewSampler(opts).Sample(logits)
}
