package qsf

import (
	"errors"
	"fmt"

	"github.com/qsf-llm/qsf/grammar"
	"github.com/qsf-llm/qsf/grammar/jsonschema"
)

// ErrGrammarStuck is returned by Generate when the grammar allows none of
// the vocabulary's tokens: the grammar needs bytes no token provides.
var ErrGrammarStuck = errors.New("qsf: the grammar allows no token of the vocabulary here")

// ErrGrammarOptions is returned by Generate when more than one of
// GenerateOptions.Grammar, GBNF and JSONSchema is set.
var ErrGrammarOptions = errors.New("qsf: set at most one of Grammar, GBNF and JSONSchema")

// grammarVocab returns the model's vocabulary as a grammar.Vocab, built on
// first use and shared by the sessions.
func (m *Model) grammarVocab() *grammar.Vocab {
	m.vocabOnce.Do(func() {
		pieces := make([]string, m.tok.VocabSize())
		for id := range pieces {
			pieces[id] = m.tok.Piece(id)
		}
		m.vocab = grammar.NewVocab(pieces, m.tok.EOG())
	})
	return m.vocab
}

// constraint is the grammar of one Generate call; a nil *constraint
// constrains nothing.
type constraint struct {
	f *grammar.Filter
}

// newConstraint compiles the grammar opts ask for, or returns nil.
func (m *Model) newConstraint(opts *GenerateOptions) (*constraint, error) {
	g := opts.Grammar
	set := 0
	for _, on := range []bool{opts.Grammar != nil, opts.GBNF != "", len(opts.JSONSchema) > 0} {
		if on {
			set++
		}
	}
	switch {
	case set > 1:
		return nil, ErrGrammarOptions
	case opts.GBNF != "":
		var err error
		if g, err = grammar.Parse(opts.GBNF); err != nil {
			return nil, fmt.Errorf("qsf: %w", err)
		}
	case len(opts.JSONSchema) > 0:
		var err error
		if g, err = jsonschema.Compile(opts.JSONSchema); err != nil {
			return nil, fmt.Errorf("qsf: %w", err)
		}
	}
	if g == nil {
		return nil, nil
	}
	return &constraint{f: grammar.NewFilter(g, m.grammarVocab())}, nil
}

// mask sets the logits of the tokens the grammar does not allow to -Inf.
func (c *constraint) mask(logits []float32) error {
	if c == nil {
		return nil
	}
	if c.f.Mask(logits) == 0 {
		return ErrGrammarStuck
	}
	return nil
}

// accept advances the grammar over the sampled token and returns it. A
// sampler may fall back to its last candidate, which can be a masked one;
// the most likely allowed token replaces it then.
func (c *constraint) accept(id int, logits []float32) (int, error) {
	if c == nil {
		return id, nil
	}
	if allowed := c.f.Allowed(); id < 0 || id >= len(allowed)*64 || allowed[id>>6]>>(id&63)&1 == 0 {
		id = argmax(logits)
	}
	return id, c.f.Accept(id)
}

// done reports whether the grammar allows nothing more.
func (c *constraint) done() bool { return c != nil && c.f.Done() }
