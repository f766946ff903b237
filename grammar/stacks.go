package grammar

// The parser state is a set of stacks. A stack is a chain of frames in an
// arena; each frame holds an element position still to match, and its
// parent the frame to continue with after it. Stacks share their tails, so
// a step only adds frames, and a search that tries bytes and backs out
// (the vocabulary walk) truncates the arena to where it was.
//
// Stacks are kept unexpanded: the top frame may point at a rule reference
// or the end of an alternative. A step with byte b expands only the rule
// alternatives whose lookahead (Grammar.first) contains b, so a state that
// could go many ways (any UTF-8 character, any JSON value) costs only the
// way b takes.

type frame struct {
	pos, parent int32
}

// stacks holds the frame arena and a hash table over it that makes every
// frame unique by content (hash-consing): equal stacks are then the same
// frame index, so a set of stacks stays as small as the grammar's
// ambiguity allows instead of growing with each way of reaching it.
type stacks struct {
	g      *Grammar
	frames []frame
	table  []slot // open addressing; entries of frames cut off are stale
	used   int    // table slots ever filled since the last rebuild
	out    []int32
	seen   []uint32 // per frame: the round that last added it to out
	gen    uint32   // the current round
}

// slot is a table entry: the frame index of a content. It is stale when
// the arena was truncated below idx or idx now holds another content.
type slot struct {
	pos, parent int32
	idx         int32 // -1: empty
}

func newStacks(g *Grammar) *stacks {
	s := &stacks{g: g}
	s.rebuild()
	return s
}

// begin starts a round: the tops it adds to out are deduplicated.
func (s *stacks) begin() {
	s.gen++
	if s.gen == 0 { // wrapped: old stamps could look current
		clear(s.seen)
		s.gen = 1
	}
}

// addTop appends frame f to out unless this round already did.
func (s *stacks) addTop(f int32) {
	if int(f) >= len(s.seen) {
		s.seen = append(s.seen, make([]uint32, int(f)+1-len(s.seen)+len(s.seen)/2)...)
	}
	if s.seen[f] != s.gen {
		s.seen[f] = s.gen
		s.out = append(s.out, f)
	}
}

func (s *stacks) live(sl *slot) bool {
	return sl.idx >= 0 && int(sl.idx) < len(s.frames) && s.frames[sl.idx] == frame{sl.pos, sl.parent}
}

// intern returns the frame (pos, parent), creating it if it does not exist.
func (s *stacks) intern(pos, parent int32) int32 {
	if 4*(s.used+1) > 3*len(s.table) {
		s.rebuild()
	}
	mask := uint32(len(s.table) - 1)
	h := slotHash(pos, parent) & mask
	free := -1
	for {
		sl := &s.table[h]
		if sl.idx < 0 { // never used since the rebuild: the key is absent
			break
		}
		if sl.pos == pos && sl.parent == parent && s.live(sl) {
			return sl.idx
		}
		if free < 0 && !s.live(sl) {
			free = int(h)
		}
		h = (h + 1) & mask
	}
	f := int32(len(s.frames))
	s.frames = append(s.frames, frame{pos, parent})
	if free < 0 {
		free = int(h)
		s.used++
	}
	s.table[free] = slot{pos, parent, f}
	return f
}

// rebuild sizes the table for the arena and fills it with the frames.
func (s *stacks) rebuild() {
	n := 256
	for n < 4*len(s.frames) {
		n *= 2
	}
	if cap(s.table) >= n && cap(s.table) <= 4*n {
		s.table = s.table[:cap(s.table)]
	} else {
		s.table = make([]slot, n)
	}
	for i := range s.table {
		s.table[i] = slot{idx: -1}
	}
	mask := uint32(len(s.table) - 1)
	s.used = 0
	for i, f := range s.frames {
		h := slotHash(f.pos, f.parent) & mask
		for s.table[h].idx >= 0 {
			h = (h + 1) & mask
		}
		s.table[h] = slot{f.pos, f.parent, int32(i)}
		s.used++
	}
}

func slotHash(pos, parent int32) uint32 {
	h := uint32(pos)*0x9E3779B1 ^ uint32(parent)*0x85EBCA77
	return h ^ h>>15
}

// step adds to s.out the stacks that follow the stack (pos, parent) after
// it consumes byte b.
func (s *stacks) step(pos, parent int32, b byte) {
	g := s.g
	for {
		if !g.nullSuffix[pos] && !g.first[pos].has(b) {
			return
		}
		e := g.elems[pos]
		switch e.kind {
		case elemByte:
			if g.sets[e.arg].has(b) {
				s.addTop(s.intern(pos+1, parent))
			}
			return
		case elemEnd:
			if parent < 0 {
				return
			}
			p := s.frames[parent]
			pos, parent = p.pos, p.parent
		case elemRef:
			next := parent
			if g.elems[pos+1].kind != elemEnd { // nothing to return to: a tail call
				next = s.intern(pos+1, parent)
			}
			alts := g.rules[e.arg].alts
			for _, a := range alts[:len(alts)-1] {
				if g.nullSuffix[a] || g.first[a].has(b) {
					s.step(a, next, b)
				}
			}
			pos, parent = alts[len(alts)-1], next
		}
	}
}

// advance appends to s.out the stacks that follow tops after byte b and
// returns how many it appended.
func (s *stacks) advance(tops []int32, b byte) int {
	s.begin()
	n := len(s.out)
	for _, t := range tops {
		f := s.frames[t]
		s.step(f.pos, f.parent, b)
	}
	return len(s.out) - n
}

// canEnd reports whether the stack (pos, parent) can match the empty
// string: the input may end there.
func (s *stacks) canEnd(pos, parent int32) bool {
	for {
		if !s.g.nullSuffix[pos] {
			return false
		}
		if parent < 0 {
			return true
		}
		p := s.frames[parent]
		pos, parent = p.pos, p.parent
	}
}

// canContinue reports whether the stack (pos, parent) can consume a byte.
func (s *stacks) canContinue(pos, parent int32) bool {
	for {
		if s.g.first[pos] != (byteSet{}) {
			return true
		}
		if !s.g.nullSuffix[pos] || parent < 0 {
			return false
		}
		p := s.frames[parent]
		pos, parent = p.pos, p.parent
	}
}

// compact copies the frames reachable from tops to the start of the arena
// (which must hold nothing else that is needed) and rewrites tops to
// match; it keeps the arena from growing with the length of the input.
func (s *stacks) compact(tops []int32, remap []int32) []int32 {
	// Frames are created after their parents, so one pass in index order
	// over the reachable ones keeps parents before children.
	if cap(remap) < len(s.frames) {
		remap = make([]int32, len(s.frames))
	}
	remap = remap[:len(s.frames)]
	for i := range remap {
		remap[i] = -2
	}
	for _, t := range tops { // mark the reachable frames -1
		for f := t; f >= 0 && remap[f] == -2; f = s.frames[f].parent {
			remap[f] = -1
		}
	}
	n := int32(0)
	for i, r := range remap {
		if r == -2 {
			continue
		}
		f := s.frames[i]
		if f.parent >= 0 {
			f.parent = remap[f.parent]
		}
		s.frames[n] = f
		remap[i] = n
		n++
	}
	s.frames = s.frames[:n]
	for i, t := range tops {
		tops[i] = remap[t]
	}
	s.rebuild()
	return remap
}
