package tokenizer

// symbol is a span of the text being merged, linked to its neighbours.
type symbol struct {
	start, n   int32
	prev, next int32
	side       int32 // BPE: id of the symbol text in Tokenizer.sideID, or -1
}

// spmBigram is a merge candidate ordered by score (higher first), then by
// left position (lower first), as llm_bigram_spm.
type spmBigram struct {
	left, right int32
	size        int32
	score       float32
}

func (a *spmBigram) before(b *spmBigram) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	return a.left < b.left
}

// spmHeap is a binary max-heap of bigrams.
type spmHeap []spmBigram

func (h *spmHeap) push(b spmBigram) {
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

func (h *spmHeap) pop() spmBigram {
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

// spmSession holds reusable buffers for llm_tokenizer_spm_session.
type spmSession struct {
	symbols []symbol
	queue   spmHeap
}

// tokenize appends the ids of text (already whitespace-escaped) to out.
//
// The text is cut into chunks at symbol boundaries that no token spans
// (the two symbols never occur next to each other inside a token text): no
// merge candidate can cross such a boundary, so merging each chunk on its
// own gives the same result as one pass over the whole text, with small
// heaps instead of one heap over the whole input.
func (s *spmSession) tokenize(t *Tokenizer, text string, out []int) []int {
	start, prev := 0, -1
	for offs := 0; offs < len(text); {
		n := min(utf8Len(text[offs]), len(text)-offs)
		if prev >= 0 && !t.spmPairs.has(text[prev:offs], text[offs:offs+n]) {
			out = s.chunk(t, text[start:offs], out)
			start = offs
		}
		prev = offs
		offs += n
	}
	return s.chunk(t, text[start:], out)
}

// chunk runs llm_tokenizer_spm_session::tokenize on one chunk.
func (s *spmSession) chunk(t *Tokenizer, text string, out []int) []int {
	if text == "" {
		return out
	}
	s.symbols = s.symbols[:0]
	s.queue = s.queue[:0]
	for offs := 0; offs < len(text); {
		n := min(utf8Len(text[offs]), len(text)-offs)
		idx := int32(len(s.symbols))
		next := idx + 1
		if offs+n == len(text) {
			next = -1
		}
		s.symbols = append(s.symbols, symbol{start: int32(offs), n: int32(n), prev: idx - 1, next: next})
		offs += n
	}
	for i := 1; i < len(s.symbols); i++ {
		s.tryAdd(t, text, int32(i-1), int32(i))
	}
	for len(s.queue) > 0 {
		b := s.queue.pop()
		left, right := &s.symbols[b.left], &s.symbols[b.right]
		if left.n == 0 || right.n == 0 || left.n+right.n != b.size {
			continue
		}
		left.n += right.n
		right.n = 0
		left.next = right.next
		if right.next >= 0 {
			s.symbols[right.next].prev = b.left
		}
		s.tryAdd(t, text, left.prev, b.left)
		s.tryAdd(t, text, b.left, left.next)
	}
	for i := int32(0); i != -1; i = s.symbols[i].next {
		sym := s.symbols[i]
		piece := text[sym.start : sym.start+sym.n]
		if id, ok := t.index[piece]; ok {
			out = append(out, id)
			continue
		}
		// Merged symbols are always tokens, so only single characters get
		// here: emit their bytes as byte tokens.
		for j := 0; j < len(piece); j++ {
			id := t.byteTok[piece[j]]
			if id < 0 {
				id = t.unk
			}
			if id >= 0 {
				out = append(out, id)
			}
		}
	}
	return out
}

func (s *spmSession) tryAdd(t *Tokenizer, text string, left, right int32) {
	if left < 0 || right < 0 {
		return
	}
	l := s.symbols[left]
	r := s.symbols[right]
	id, ok := t.index[text[l.start:l.start+l.n+r.n]]
	if !ok {
		return
	}
	s.queue.push(spmBigram{left: left, right: right, size: l.n + r.n, score: t.scores[id]})
}

// pairSet records which symbol pairs occur adjacent inside some token.
type pairSet struct {
	ascii [128 * 128 / 64]uint64
	other map[[2]uint64]struct{}
}

// symKey packs a symbol of 1..4 bytes with its length.
func symKey(s string) uint64 {
	k := uint64(len(s)) << 32
	for i := 0; i < len(s) && i < 4; i++ {
		k |= uint64(s[i]) << (8 * i)
	}
	return k
}

func (p *pairSet) add(x, y string) {
	if len(x) == 1 && len(y) == 1 && x[0] < 128 && y[0] < 128 {
		i := int(x[0])*128 + int(y[0])
		p.ascii[i/64] |= 1 << (i % 64)
		return
	}
	if p.other == nil {
		p.other = map[[2]uint64]struct{}{}
	}
	p.other[[2]uint64{symKey(x), symKey(y)}] = struct{}{}
}

func (p *pairSet) has(x, y string) bool {
	if len(x) == 1 && len(y) == 1 && x[0] < 128 && y[0] < 128 {
		i := int(x[0])*128 + int(y[0])
		return p.ascii[i/64]&(1<<(i%64)) != 0
	}
	if len(x) > 4 || len(y) > 4 {
		return true
	}
	_, ok := p.other[[2]uint64{symKey(x), symKey(y)}]
	return ok
}

// buildSPMPairs fills t.spmPairs from the vocabulary, segmenting each token
// text into symbols the way the tokenizer segments its input.
func (t *Tokenizer) buildSPMPairs() {
	t.spmPairs = &pairSet{}
	for _, w := range t.tokens {
		prev := -1
		for offs := 0; offs < len(w); {
			n := min(utf8Len(w[offs]), len(w)-offs)
			if prev >= 0 {
				t.spmPairs.add(w[prev:offs], w[offs:offs+n])
			}
			prev = offs
			offs += n
		}
	}
}
