package grammar

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Grammar is a compiled grammar: an immutable pushdown automaton over bytes,
// safe for concurrent use by any number of Matchers and Filters.
//
// The automaton is a flat list of elements. Each alternative of each rule
// is a run of elements closed by an end element; an element is a byte set
// to match or a reference to a rule.
type Grammar struct {
	elems []elem
	rules []rule
	sets  []byteSet
	root  int32

	// Lookahead, per element position: the bytes the rest of the
	// alternative from there can begin with, and whether that rest can
	// match the empty string. They let a step expand only the rule
	// alternatives that can consume the next byte.
	first      []byteSet
	nullSuffix []bool
}

type elemKind uint8

const (
	elemEnd  elemKind = iota // end of an alternative
	elemByte                 // match one byte of sets[arg]
	elemRef                  // expand rules[arg]
)

type elem struct {
	kind elemKind
	arg  int32
}

type rule struct {
	name string
	alts []int32 // first element of each alternative
}

// byteSet is a set of byte values.
type byteSet [4]uint64

func (s *byteSet) has(b byte) bool { return s[b>>6]>>(b&63)&1 != 0 }

func (s *byteSet) union(t *byteSet) {
	for i := range s {
		s[i] |= t[i]
	}
}

func (s *byteSet) addRange(lo, hi byte) {
	for c := int(lo); c <= int(hi); c++ {
		s[c>>6] |= 1 << (c & 63)
	}
}

// Parse compiles GBNF text. Errors in the text are *SyntaxError values
// (with line and column); a grammar without a root rule gives ErrNoRoot.
func Parse(text string) (*Grammar, error) {
	p := parser{src: text}
	defs, err := p.parseRules()
	if err != nil {
		return nil, err
	}
	c := compiler{
		g:       &Grammar{},
		p:       &p,
		byName:  map[string]int32{},
		setIDs:  map[byteSet]int32{},
		classes: map[string]int32{},
	}
	for _, d := range defs {
		if _, dup := c.byName[d.name]; dup {
			return nil, p.errAt(d.pos, "rule %q is defined twice", d.name)
		}
		c.byName[d.name] = c.newRule(d.name)
		c.defPos = append(c.defPos, d.pos)
	}
	root, ok := c.byName["root"]
	if !ok {
		return nil, ErrNoRoot
	}
	c.g.root = root
	for i, d := range defs {
		if err := c.defineRule(int32(i), d.name, d.alts); err != nil {
			return nil, err
		}
	}
	nullable, err := c.checkLeftRecursion()
	if err != nil {
		return nil, err
	}
	if !c.g.prune() {
		return nil, ErrEmpty
	}
	c.g.lookahead(nullable)
	return c.g, nil
}

// MustParse is Parse for grammars known to be valid; it panics on error.
func MustParse(text string) *Grammar {
	g, err := Parse(text)
	if err != nil {
		panic(err)
	}
	return g
}

type compiler struct {
	g       *Grammar
	p       *parser
	byName  map[string]int32
	defPos  []int // source offset of each named rule (synthetic rules have none)
	setIDs  map[byteSet]int32
	classes map[string]int32 // multi-byte class rules by their ranges
}

func (c *compiler) newRule(name string) int32 {
	c.g.rules = append(c.g.rules, rule{name: name})
	return int32(len(c.g.rules) - 1)
}

// subRule creates a synthetic rule owned by the named rule named.
func (c *compiler) subRule(owner int32) int32 {
	return c.newRule(fmt.Sprintf("%s_%d", c.g.rules[owner].name, len(c.g.rules)))
}

// defineRule compiles the alternatives of rule r; owner names the
// user-visible rule they come from.
func (c *compiler) defineRule(r int32, owner string, alts [][]*node) error {
	var bodies [][]elem
	for _, seq := range alts {
		var body []elem
		for _, n := range seq {
			var err error
			if body, err = c.item(body, n, r); err != nil {
				return err
			}
		}
		bodies = append(bodies, body)
	}
	return c.setAlts(r, bodies)
}

// setAlts appends the alternatives' elements and records where they start.
func (c *compiler) setAlts(r int32, bodies [][]elem) error {
	for _, body := range bodies {
		if len(c.g.elems)+len(body)+1 > maxElements {
			return errTooLarge()
		}
		c.g.rules[r].alts = append(c.g.rules[r].alts, int32(len(c.g.elems)))
		c.g.elems = append(c.g.elems, body...)
		c.g.elems = append(c.g.elems, elem{kind: elemEnd})
	}
	return nil
}

func (c *compiler) set(s byteSet) elem {
	id, ok := c.setIDs[s]
	if !ok {
		id = int32(len(c.g.sets))
		c.g.sets = append(c.g.sets, s)
		c.setIDs[s] = id
	}
	return elem{kind: elemByte, arg: id}
}

func (c *compiler) byteElem(b byte) elem {
	var s byteSet
	s.addRange(b, b)
	return c.set(s)
}

// item appends the elements matching n to body. owner is the rule being
// compiled (synthetic rules are named after it).
func (c *compiler) item(body []elem, n *node, owner int32) ([]elem, error) {
	if len(body) > maxElements {
		return nil, errTooLarge()
	}
	switch n.kind {
	case nLiteral:
		var buf [utf8.UTFMax]byte
		for _, r := range n.runes {
			k := utf8.EncodeRune(buf[:], r)
			for _, b := range buf[:k] {
				body = append(body, c.byteElem(b))
			}
		}
		return body, nil
	case nClass, nAny:
		ranges := []runeRange{{0, utf8.MaxRune}}
		if n.kind == nClass {
			ranges = normalizeRanges(n.ranges, n.negated)
		} else {
			ranges = normalizeRanges(ranges, false)
		}
		e, err := c.class(ranges, owner)
		if err != nil {
			return nil, err
		}
		return append(body, e), nil
	case nRef:
		r, ok := c.byName[n.name]
		if !ok {
			return nil, c.p.errAt(n.pos, "undefined rule %q", n.name)
		}
		return append(body, elem{kind: elemRef, arg: r}), nil
	case nGroup:
		if len(n.alts) == 1 {
			for _, m := range n.alts[0] {
				var err error
				if body, err = c.item(body, m, owner); err != nil {
					return nil, err
				}
			}
			return body, nil
		}
		r := c.subRule(owner)
		if err := c.defineRule(r, "", n.alts); err != nil {
			return nil, err
		}
		return append(body, elem{kind: elemRef, arg: r}), nil
	case nRepeat:
		sub, err := c.item(nil, n.sub, owner)
		if err != nil {
			return nil, err
		}
		if len(sub)*n.min > maxElements {
			return nil, errTooLarge()
		}
		for range n.min {
			body = append(body, sub...)
		}
		switch {
		case n.max < 0: // R ::= sub R | ε
			r := c.subRule(owner)
			ref := elem{kind: elemRef, arg: r}
			if err := c.setAlts(r, [][]elem{append(sub, ref), nil}); err != nil {
				return nil, err
			}
			body = append(body, ref)
		case n.max > n.min: // R1 ::= sub | ε, Rk ::= sub Rk-1 | ε
			var prev []elem
			for range n.max - n.min {
				r := c.subRule(owner)
				alt := append(append([]elem(nil), sub...), prev...)
				if err := c.setAlts(r, [][]elem{alt, nil}); err != nil {
					return nil, err
				}
				prev = []elem{{kind: elemRef, arg: r}}
			}
			body = append(body, prev...)
		}
		return body, nil
	}
	return nil, fmt.Errorf("grammar: internal error: node kind %d", n.kind)
}

// class returns the element matching one character in ranges: a byte set
// for ASCII, otherwise a reference to a rule of UTF-8 byte sequences.
func (c *compiler) class(ranges []runeRange, owner int32) (elem, error) {
	if len(ranges) == 0 {
		return c.set(byteSet{}), nil // matches nothing
	}
	if ranges[len(ranges)-1].hi < utf8.RuneSelf {
		var s byteSet
		for _, r := range ranges {
			s.addRange(byte(r.lo), byte(r.hi))
		}
		return c.set(s), nil
	}
	var key strings.Builder
	for _, r := range ranges {
		fmt.Fprintf(&key, "%x-%x,", r.lo, r.hi)
	}
	if r, ok := c.classes[key.String()]; ok {
		return elem{kind: elemRef, arg: r}, nil
	}
	r := c.subRule(owner)
	c.classes[key.String()] = r
	// One alternative per leading byte range: sequences that share their
	// first bytes stay separate, which keeps the rule simple; the stacks
	// of non-matching ones are dropped at the first byte.
	var bodies [][]elem
	var ascii byteSet
	for _, rr := range ranges {
		utf8Sequences(rr.lo, rr.hi, func(seq []byteRange) {
			if len(seq) == 1 {
				ascii.addRange(seq[0].lo, seq[0].hi)
				return
			}
			body := make([]elem, len(seq))
			for i, br := range seq {
				var s byteSet
				s.addRange(br.lo, br.hi)
				body[i] = c.set(s)
			}
			bodies = append(bodies, body)
		})
	}
	if ascii != (byteSet{}) {
		bodies = append([][]elem{{c.set(ascii)}}, bodies...)
	}
	return elem{kind: elemRef, arg: r}, c.setAlts(r, bodies)
}

// checkLeftRecursion rejects grammars in which a rule can reach itself
// without consuming a byte: the automaton would expand it forever.
func (c *compiler) checkLeftRecursion() ([]bool, error) {
	g := c.g
	nullable := make([]bool, len(g.rules))
	for changed := true; changed; {
		changed = false
		for r := range g.rules {
			if nullable[r] {
				continue
			}
			for _, a := range g.rules[r].alts {
				if g.nullableFrom(a, nullable) {
					nullable[r] = true
					changed = true
					break
				}
			}
		}
	}
	const (
		unvisited = iota
		active
		done
	)
	state := make([]uint8, len(g.rules))
	var visit func(r int32) int32
	visit = func(r int32) int32 {
		state[r] = active
		for _, a := range g.rules[r].alts {
			for pos := a; g.elems[pos].kind == elemRef; pos++ {
				next := g.elems[pos].arg
				switch state[next] {
				case active:
					return next
				case unvisited:
					if bad := visit(next); bad >= 0 {
						return bad
					}
				}
				if !nullable[next] {
					break
				}
			}
		}
		state[r] = done
		return -1
	}
	for r := range g.rules {
		if state[r] != unvisited {
			continue
		}
		if bad := visit(int32(r)); bad >= 0 {
			// Report the user's rule the synthetic one belongs to.
			name := g.rules[bad].name
			if i := strings.IndexByte(name, '_'); i >= 0 {
				name = name[:i]
			}
			if id, ok := c.byName[name]; ok {
				return nil, c.p.errAt(c.defPos[id], "rule %q can reach itself without consuming input (left recursion, or a repetition of something that can be empty)", name)
			}
			return nil, fmt.Errorf("grammar: left recursion through %q", name)
		}
	}
	return nullable, nil
}

// lookahead fills first and nullSuffix. The rules' first sets depend on
// each other only through nullable prefixes, which form no cycle once
// left recursion is excluded, so one memoized depth-first pass computes
// them.
func (g *Grammar) lookahead(nullable []bool) {
	g.first = make([]byteSet, len(g.elems))
	g.nullSuffix = make([]bool, len(g.elems))
	ruleFirst := make([]byteSet, len(g.rules))
	done := make([]bool, len(g.rules))
	var firstOf func(r int32) byteSet
	firstOf = func(r int32) byteSet {
		if done[r] {
			return ruleFirst[r]
		}
		var acc byteSet
		for _, a := range g.rules[r].alts {
		seq:
			for pos := a; ; pos++ {
				switch e := g.elems[pos]; e.kind {
				case elemEnd:
					break seq
				case elemByte:
					acc.union(&g.sets[e.arg])
					break seq
				case elemRef:
					f := firstOf(e.arg)
					acc.union(&f)
					if !nullable[e.arg] {
						break seq
					}
				}
			}
		}
		ruleFirst[r], done[r] = acc, true
		return acc
	}
	for r := range g.rules {
		firstOf(int32(r))
	}
	// Per position, from the end of each alternative backwards.
	for pos := len(g.elems) - 1; pos >= 0; pos-- {
		switch e := g.elems[pos]; e.kind {
		case elemEnd:
			g.nullSuffix[pos] = true
		case elemByte:
			g.first[pos] = g.sets[e.arg]
		case elemRef:
			g.first[pos] = ruleFirst[e.arg]
			if nullable[e.arg] {
				g.first[pos].union(&g.first[pos+1])
				g.nullSuffix[pos] = g.nullSuffix[pos+1]
			}
		}
	}
}

// nullableFrom says whether the elements from pos to the end of their
// alternative can all match the empty string.
func (g *Grammar) nullableFrom(pos int32, nullable []bool) bool {
	for ; ; pos++ {
		switch e := g.elems[pos]; e.kind {
		case elemEnd:
			return true
		case elemByte:
			return false
		case elemRef:
			if !nullable[e.arg] {
				return false
			}
		}
	}
}

// ErrEmpty is returned for a grammar that matches no string at all (its
// root needs a character class that matches nothing, such as [^\x00-\U0010FFFF]).
var ErrEmpty = errors.New("grammar: matches no string")

// prune drops the alternatives that can match no string (they need an
// empty character class, directly or through rules that do), so that no
// token leads the parse into a dead end. It reports whether the root
// keeps an alternative.
func (g *Grammar) prune() bool {
	productive := make([]bool, len(g.rules))
	alive := func(a int32) bool {
		for pos := a; ; pos++ {
			switch e := g.elems[pos]; e.kind {
			case elemEnd:
				return true
			case elemByte:
				if g.sets[e.arg] == (byteSet{}) {
					return false
				}
			case elemRef:
				if !productive[e.arg] {
					return false
				}
			}
		}
	}
	for changed := true; changed; {
		changed = false
		for r := range g.rules {
			if productive[r] {
				continue
			}
			for _, a := range g.rules[r].alts {
				if alive(a) {
					productive[r], changed = true, true
					break
				}
			}
		}
	}
	for r := range g.rules {
		alts := g.rules[r].alts[:0]
		for _, a := range g.rules[r].alts {
			if alive(a) {
				alts = append(alts, a)
			}
		}
		g.rules[r].alts = alts
	}
	return productive[g.root]
}

// ErrTooLarge is returned for a grammar whose repetitions expand into an
// automaton too large to be useful.
var ErrTooLarge = errors.New("grammar: too large after expanding repetitions")

func errTooLarge() error {
	return fmt.Errorf("%w (more than %d elements)", ErrTooLarge, maxElements)
}
