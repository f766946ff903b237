package grammar

// Matcher follows a Grammar through a stream of bytes. It is not safe for
// concurrent use; create one per sequence.
type Matcher struct {
	g     *Grammar
	st    *stacks
	tops  []int32 // the current stacks' top frames
	next  []int32
	remap []int32
}

// NewMatcher returns a matcher at the start of the grammar.
func NewMatcher(g *Grammar) *Matcher {
	m := &Matcher{g: g, st: newStacks(g)}
	m.Reset()
	return m
}

// Reset returns the matcher to the start of the grammar.
func (m *Matcher) Reset() {
	st := m.st
	st.frames = st.frames[:0]
	st.out = st.out[:0]
	st.rebuild()
	st.begin()
	for _, a := range m.g.rules[m.g.root].alts {
		st.addTop(st.intern(a, -1))
	}
	m.tops = append(m.tops[:0], st.out...)
	st.out = st.out[:0]
}

// Accept advances over b and reports whether b continues the parse. When it
// does not, the matcher is left as it was.
func (m *Matcher) Accept(b []byte) bool { return acceptBytes(m, b) }

// AcceptString is Accept for a string.
func (m *Matcher) AcceptString(s string) bool { return acceptBytes(m, s) }

func acceptBytes[T string | []byte](m *Matcher, b T) bool {
	st := m.st
	mark := len(st.frames)
	m.next = append(m.next[:0], m.tops...)
	for i := 0; i < len(b); i++ {
		c := b[i]
		st.out = st.out[:0]
		if st.advance(m.next, c) == 0 {
			st.frames = st.frames[:mark]
			st.out = st.out[:0]
			return false
		}
		m.next = append(m.next[:0], st.out...)
	}
	st.out = st.out[:0]
	m.tops, m.next = m.next, m.tops
	m.remap = st.compact(m.tops, m.remap)
	return true
}

// Accepting reports whether the bytes so far form a complete sentence.
func (m *Matcher) Accepting() bool {
	for _, t := range m.tops {
		if f := m.st.frames[t]; m.st.canEnd(f.pos, f.parent) {
			return true
		}
	}
	return false
}

// Done reports whether the input is complete and nothing can follow it.
func (m *Matcher) Done() bool {
	for _, t := range m.tops {
		if f := m.st.frames[t]; m.st.canContinue(f.pos, f.parent) {
			return false
		}
	}
	return m.Accepting()
}

// Match reports whether s is a sentence of the grammar.
func (g *Grammar) Match(s string) bool {
	m := NewMatcher(g)
	return m.AcceptString(s) && m.Accepting()
}
