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

// stacks holds the frame arena and the interning table that keeps a
// round's new frames (and so its stacks) free of duplicates.
type stacks struct {
	g      *Grammar
	frames []frame
	out    []int32 // tops being produced by the current round
	table  []internSlot
	gen    uint32
	fresh  int // frames added in the current round
}

type internSlot struct {
	gen         uint32
	top         bool // a top frame (returned by expand) rather than a return frame
	pos, parent int32
	frame       int32
}

func newStacks(g *Grammar) *stacks {
	return &stacks{g: g, table: make([]internSlot, 256)}
}

// begin starts a round: frames interned from now on are deduplicated
// against each other only.
func (s *stacks) begin() {
	s.gen++
	if s.gen == 0 { // wrapped: old stamps could look current
		clear(s.table)
		s.gen = 1
	}
	s.fresh = 0
}

// intern returns the frame (pos, parent) of the current round, creating it
// if needed; created reports whether it is new. Tops and return frames are
// kept apart so that a top is reported new exactly once.
func (s *stacks) intern(pos, parent int32, top bool) (int32, bool) {
	if 2*(s.fresh+1) > len(s.table) {
		s.grow()
	}
	mask := uint32(len(s.table) - 1)
	h := slotHash(pos, parent) & mask
	for {
		sl := &s.table[h]
		if sl.gen != s.gen {
			f := int32(len(s.frames))
			s.frames = append(s.frames, frame{pos, parent})
			*sl = internSlot{gen: s.gen, top: top, pos: pos, parent: parent, frame: f}
			s.fresh++
			return f, true
		}
		if sl.pos == pos && sl.parent == parent && sl.top == top {
			return sl.frame, false
		}
		h = (h + 1) & mask
	}
}

// grow doubles the interning table, keeping the current round's entries.
func (s *stacks) grow() {
	old := s.table
	s.table = make([]internSlot, 2*len(old))
	mask := uint32(len(s.table) - 1)
	for _, sl := range old {
		if sl.gen != s.gen {
			continue
		}
		h := slotHash(sl.pos, sl.parent) & mask
		for s.table[h].gen == s.gen {
			h = (h + 1) & mask
		}
		s.table[h] = sl
	}
}

func slotHash(pos, parent int32) uint32 {
	return uint32(pos)*0x9E3779B1 ^ uint32(parent)*0x85EBCA77
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
				if f, created := s.intern(pos+1, parent, true); created {
					s.out = append(s.out, f)
				}
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
				next, _ = s.intern(pos+1, parent, false)
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
	var mark func(f int32)
	mark = func(f int32) {
		for f >= 0 && remap[f] == -2 {
			remap[f] = -1
			f = s.frames[f].parent
		}
	}
	for _, t := range tops {
		mark(t)
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
	return remap
}
