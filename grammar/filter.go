package grammar

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// ErrRejected is returned by Filter.Accept for a token the grammar does
// not allow at that point.
var ErrRejected = errors.New("grammar: token not allowed here")

// Filter applies a Grammar to a vocabulary's tokens: it says which tokens
// may come next, and follows the parse as tokens are chosen. It is not safe
// for concurrent use; create one per sequence.
//
// The allowed set depends only on the parser's stacks, which repeat (the
// inside of a JSON string is one state however long the string is), so
// Filter caches it per state; a miss walks the stacks through the
// vocabulary's trie, visiting each prefix shared by several tokens once
// and pruning every subtree no stack can enter.
type Filter struct {
	m     *Matcher
	v     *Vocab
	ended bool // an end-of-generation token was accepted

	key   []int32
	cache [cacheSlots]cacheEntry
	cur   *cacheEntry // the entry of the current state, once computed
}

const cacheSlots = 64

type cacheEntry struct {
	hash  uint64
	key   []int32
	valid bool
	bits  []uint64 // allowed token ids
	count int      // number of allowed ids
}

// NewFilter returns a filter at the start of g over the tokens of v.
func NewFilter(g *Grammar, v *Vocab) *Filter {
	return &Filter{m: NewMatcher(g), v: v}
}

// Reset returns the filter to the start of the grammar.
func (f *Filter) Reset() {
	f.m.Reset()
	f.ended = false
	f.cur = nil
}

// Accepting reports whether the tokens so far form a complete sentence.
func (f *Filter) Accepting() bool { return f.ended || f.m.Accepting() }

// Done reports whether nothing more may follow: the sentence is complete
// and the grammar allows no further byte, or an end-of-generation token was
// accepted.
func (f *Filter) Done() bool { return f.ended || f.m.Done() }

// Accept advances over token id. It returns an error wrapping ErrRejected
// if the grammar does not allow the token here, and leaves the state as it
// was.
func (f *Filter) Accept(id int) error {
	if f.ended {
		return fmt.Errorf("%w: token %d after the end of generation", ErrRejected, id)
	}
	for _, e := range f.v.eog {
		if int(e) == id {
			if !f.m.Accepting() {
				return fmt.Errorf("%w: end of generation before the grammar is complete", ErrRejected)
			}
			f.ended = true
			f.cur = nil
			return nil
		}
	}
	if id < 0 || id >= len(f.v.pieces) {
		return fmt.Errorf("%w: token %d is outside the vocabulary", ErrRejected, id)
	}
	if piece := f.v.pieces[id]; piece == "" || !f.m.AcceptString(piece) {
		return fmt.Errorf("%w: token %d (%q)", ErrRejected, id, piece)
	}
	f.cur = nil
	return nil
}

// Allowed returns the set of token ids that may come next, one bit per id
// (bit id%64 of word id/64). The slice belongs to the filter and is valid
// until the next call to Accept or Reset.
func (f *Filter) Allowed() []uint64 {
	return f.entry().bits
}

// Count returns the number of token ids that may come next.
func (f *Filter) Count() int { return f.entry().count }

// Mask sets to -Inf the logits of the tokens that may not come next (and of
// ids beyond the vocabulary) and returns the number of tokens left.
func (f *Filter) Mask(logits []float32) int {
	e := f.entry()
	neg := float32(math.Inf(-1))
	for w := 0; w*64 < len(logits); w++ {
		var bits uint64
		if w < len(e.bits) {
			bits = e.bits[w]
		}
		if bits == math.MaxUint64 {
			continue
		}
		end := min(w*64+64, len(logits))
		for id := w * 64; id < end; id++ {
			if bits>>(id&63)&1 == 0 {
				logits[id] = neg
			}
		}
	}
	return e.count
}

// entry returns the cache entry of the current state, computing it if
// needed.
func (f *Filter) entry() *cacheEntry {
	if f.cur != nil {
		return f.cur
	}
	// The key is every stack, top to bottom, and the ended flag.
	m := f.m
	f.key = f.key[:0]
	if f.ended {
		f.key = append(f.key, -3)
	}
	for _, t := range m.tops {
		for fr := t; fr >= 0; fr = m.st.frames[fr].parent {
			f.key = append(f.key, m.st.frames[fr].pos)
		}
		f.key = append(f.key, -2)
	}
	h := uint64(14695981039346656037)
	for _, k := range f.key {
		h ^= uint64(uint32(k))
		h *= 1099511628211
	}
	e := &f.cache[h%cacheSlots]
	if e.valid && e.hash == h && slices.Equal(e.key, f.key) {
		f.cur = e
		return e
	}
	e.hash, e.valid = h, true
	e.key = append(e.key[:0], f.key...)
	words := (f.v.size + 63) / 64
	if cap(e.bits) < words {
		e.bits = make([]uint64, words)
	}
	e.bits = e.bits[:words]
	clear(e.bits)
	if !f.ended {
		f.walk(0, m.tops, e.bits)
		if m.Accepting() {
			for _, id := range f.v.eog {
				e.bits[id>>6] |= 1 << (id & 63)
			}
		}
	}
	e.count = 0
	for _, w := range e.bits {
		e.count += bits.OnesCount64(w)
	}
	f.cur = e
	return e
}

// walk marks in bits every token below trie node n that the stacks tops
// (tops of the input up to n) can consume.
func (f *Filter) walk(n int32, tops []int32, allowed []uint64) {
	st := f.m.st
	v := f.v
	node := v.nodes[n]
	for c := node.first; c < node.first+node.numChildren; c++ {
		child := &v.nodes[c]
		frames, outs := len(st.frames), len(st.out)
		k := st.advance(tops, child.b)
		if k > 0 {
			for _, id := range v.tokens[child.tokStart:child.tokEnd] {
				allowed[id>>6] |= 1 << (id & 63)
			}
			if child.numChildren > 0 {
				f.walk(c, st.out[outs:outs+k], allowed)
			}
		}
		st.frames, st.out = st.frames[:frames], st.out[:outs]
	}
}
