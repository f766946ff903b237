package tokenizer

import (
	"strings"
)

// loadMerges indexes "left right" merge rules by rank (line order), as
// llama.cpp's bpe_ranks (the split is at the first space after byte 0; a
// later duplicate pair keeps the first rank).
func (t *Tokenizer) loadMerges(merges []string) {
	t.sideID = make(map[string]int32, len(merges))
	t.ranks = make(map[uint64]int32, len(merges))
	side := func(s string) int32 {
		id, ok := t.sideID[s]
		if !ok {
			id = int32(len(t.sideID))
			t.sideID[s] = id
		}
		return id
	}
	for i, m := range merges {
		var first, second string
		if len(m) > 1 {
			if p := strings.IndexByte(m[1:], ' '); p >= 0 {
				first, second = m[:p+1], m[p+2:]
			}
		}
		key := uint64(side(first))<<32 | uint64(uint32(side(second)))
		if _, dup := t.ranks[key]; !dup {
			t.ranks[key] = int32(i)
		}
	}
}

// rank returns the merge rank of two adjacent symbols, or -1.
func (t *Tokenizer) rank(word string, l, r *symbol) int32 {
	if t.tiktoken {
		id, ok := t.index[word[l.start:l.start+l.n+r.n]]
		if !ok {
			return -1
		}
		return int32(id)
	}
	if l.side < 0 || r.side < 0 {
		return -1
	}
	rk, ok := t.ranks[uint64(l.side)<<32|uint64(uint32(r.side))]
	if !ok {
		return -1
	}
	return rk
}

func (t *Tokenizer) sideOf(s string) int32 {
	if t.tiktoken {
		return 0
	}
	if id, ok := t.sideID[s]; ok {
		return id
	}
	return -1
}

// bpeBigram is a merge candidate ordered by rank, then left position.
type bpeBigram struct {
	left, right int32
	size        int32
	rank        int32
}

func (a *bpeBigram) before(b *bpeBigram) bool {
	if a.rank != b.rank {
		return a.rank < b.rank
	}
	return a.left < b.left
}

type bpeHeap []bpeBigram

func (h *bpeHeap) push(b bpeBigram) {
	*h = append(*h, b)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !s[i].before(&s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *bpeHeap) pop() bpeBigram {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	i := 0
	for {
		l := 2*i + 1
		if l >= len(s) {
			break
		}
		m := l
		if r := l + 1; r < len(s) && s[r].before(&s[l]) {
			m = r
		}
		if !s[m].before(&s[i]) {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}

// bpeSession holds reusable buffers for llm_tokenizer_bpe_session.
type bpeSession struct {
	pt      pretok
	enc     []byte
	symbols []symbol
	queue   bpeHeap
	cache   map[string][]int // word -> ids, valid for one Encode call
}

// maxCacheWords bounds the per-call word cache.
const maxCacheWords = 1 << 16

// tokenize appends the ids of one raw-text fragment to out.
func (s *bpeSession) tokenize(t *Tokenizer, text string, out []int) []int {
	words := s.pt.split(t.split, text)
	for _, w := range words {
		if ids, ok := s.cache[w]; ok {
			out = append(out, ids...)
			continue
		}
		s.enc = encodeByteLevel(s.enc[:0], w)
		n := len(out)
		out = s.word(t, string(s.enc), out)
		if s.cache == nil || len(s.cache) >= maxCacheWords {
			s.cache = make(map[string][]int)
		}
		s.cache[strings.Clone(w)] = append([]int(nil), out[n:]...)
	}
	return out
}

// word runs the merge loop over one byte-level-encoded word.
func (s *bpeSession) word(t *Tokenizer, word string, out []int) []int {
	if t.ignoreMerges {
		if id, ok := t.index[word]; ok {
			return append(out, id)
		}
	}
	s.symbols = s.symbols[:0]
	s.queue = s.queue[:0]
	for offs := 0; offs < len(word); {
		n := min(utf8Len(word[offs]), len(word)-offs)
		idx := int32(len(s.symbols))
		next := idx + 1
		if offs+n == len(word) {
			next = -1
		}
		s.symbols = append(s.symbols, symbol{start: int32(offs), n: int32(n), prev: idx - 1, next: next,
			side: t.sideOf(word[offs : offs+n])})
		offs += n
	}
	for i := 1; i < len(s.symbols); i++ {
		s.add(t, word, int32(i-1), int32(i))
	}
	for len(s.queue) > 0 {
		b := s.queue.pop()
		left, right := &s.symbols[b.left], &s.symbols[b.right]
		if left.n == 0 || right.n == 0 || left.n+right.n != b.size {
			continue
		}
		left.n += right.n
		right.n = 0
		left.side = t.sideOf(word[left.start : left.start+left.n])
		left.next = right.next
		if right.next >= 0 {
			s.symbols[right.next].prev = b.left
		}
		s.add(t, word, left.prev, b.left)
		s.add(t, word, b.left, left.next)
	}
	for i := int32(0); i >= 0 && len(s.symbols) > 0; i = s.symbols[i].next {
		sym := &s.symbols[i]
		piece := word[sym.start : sym.start+sym.n]
		if id, ok := t.index[piece]; ok {
			out = append(out, id)
			continue
		}
		for j := 0; j < len(piece); j++ {
			if id, ok := t.index[piece[j:j+1]]; ok {
				out = append(out, id)
			}
		}
	}
	return out
}

func (s *bpeSession) add(t *Tokenizer, word string, left, right int32) {
	if left < 0 || right < 0 {
		return
	}
	l, r := &s.symbols[left], &s.symbols[right]
	rk := t.rank(word, l, r)
	if rk < 0 {
		return
	}
	s.queue.push(bpeBigram{left: left, right: right, size: l.n + r.n, rank: rk})
}
