package grammar

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// SyntaxError reports a malformed grammar and where the problem is.
type SyntaxError struct {
	Line, Column int // 1-based; Column counts characters
	Msg          string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("grammar: line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

// ErrNoRoot is returned for a grammar without a "root" rule.
var ErrNoRoot = errors.New("grammar: no root rule")

// Limits that keep a small grammar text from compiling into a huge automaton.
const (
	maxRepeat   = 4096    // largest bound in {m,n}
	maxElements = 1 << 16 // largest compiled automaton, in elements
)

type nodeKind uint8

const (
	nLiteral nodeKind = iota // runes
	nClass                   // ranges, negated
	nAny                     // "."
	nRef                     // name
	nGroup                   // alts
	nRepeat                  // sub{min,max}; max < 0 means unbounded
)

// node is one element of a parsed sequence.
type node struct {
	kind     nodeKind
	pos      int // offset in the source, for errors
	runes    []rune
	ranges   []runeRange
	negated  bool
	name     string
	alts     [][]*node
	sub      *node
	min, max int
}

type runeRange struct{ lo, hi rune }

// ruleDef is one "name ::= alternatives" line.
type ruleDef struct {
	name string
	pos  int
	alts [][]*node
}

// parser reads GBNF text as llama.cpp's parser does: newlines end a rule
// except inside parentheses and after "::=" or "|".
type parser struct {
	src   string
	pos   int
	depth int
}

// maxDepth bounds the nesting of parentheses.
const maxDepth = 1000

func (p *parser) errAt(pos int, format string, args ...any) error {
	line, col := 1, 1
	for i, r := range p.src {
		if i >= pos {
			break
		}
		if r == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return &SyntaxError{Line: line, Column: col, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) peek(off int) byte {
	if p.pos+off < len(p.src) {
		return p.src[p.pos+off]
	}
	return 0
}

func (p *parser) eof() bool { return p.pos >= len(p.src) }

// space skips blanks and comments, and newlines when newlines is set.
func (p *parser) space(newlines bool) {
	for !p.eof() {
		switch c := p.src[p.pos]; {
		case c == ' ' || c == '\t':
			p.pos++
		case c == '#':
			for !p.eof() && p.src[p.pos] != '\r' && p.src[p.pos] != '\n' {
				p.pos++
			}
		case (c == '\r' || c == '\n') && newlines:
			p.pos++
		default:
			return
		}
	}
}

func isWordChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
}

func (p *parser) name() string {
	start := p.pos
	for !p.eof() && isWordChar(p.src[p.pos]) {
		p.pos++
	}
	return p.src[start:p.pos]
}

// parseRules reads the whole grammar.
func (p *parser) parseRules() ([]ruleDef, error) {
	var rules []ruleDef
	p.space(true)
	for !p.eof() {
		start := p.pos
		name := p.name()
		if name == "" {
			return nil, p.errAt(p.pos, "expecting a rule name, found %s", p.describe())
		}
		p.space(false)
		if !hasPrefixAt(p.src, p.pos, "::=") {
			return nil, p.errAt(p.pos, "expecting ::= after rule name %q, found %s", name, p.describe())
		}
		p.pos += 3
		p.space(true)
		alts, err := p.alternates(false)
		if err != nil {
			return nil, err
		}
		switch {
		case p.eof():
		case p.src[p.pos] == '\r':
			p.pos++
			if p.peek(0) == '\n' {
				p.pos++
			}
		case p.src[p.pos] == '\n':
			p.pos++
		default:
			return nil, p.errAt(p.pos, "expecting newline or end of input, found %s", p.describe())
		}
		rules = append(rules, ruleDef{name: name, pos: start, alts: alts})
		p.space(true)
	}
	return rules, nil
}

func hasPrefixAt(s string, i int, prefix string) bool {
	return len(s)-i >= len(prefix) && s[i:i+len(prefix)] == prefix
}

// describe names what is at the current position, for error messages.
func (p *parser) describe() string {
	if p.eof() {
		return "end of input"
	}
	r, _ := utf8.DecodeRuneInString(p.src[p.pos:])
	return fmt.Sprintf("%q", r)
}

func (p *parser) alternates(nested bool) ([][]*node, error) {
	var alts [][]*node
	for {
		seq, err := p.sequence(nested)
		if err != nil {
			return nil, err
		}
		alts = append(alts, seq)
		if p.peek(0) != '|' {
			return alts, nil
		}
		p.pos++
		p.space(true)
	}
}

func (p *parser) sequence(nested bool) ([]*node, error) {
	var seq []*node
	for !p.eof() {
		start := p.pos
		c := p.src[p.pos]
		switch {
		case c == '"':
			p.pos++
			var runes []rune
			for {
				if p.eof() {
					return nil, p.errAt(start, "unterminated string literal")
				}
				if p.src[p.pos] == '"' {
					p.pos++
					break
				}
				r, err := p.char()
				if err != nil {
					return nil, err
				}
				runes = append(runes, r)
			}
			seq = append(seq, &node{kind: nLiteral, pos: start, runes: runes})
			p.space(nested)
		case c == '[':
			p.pos++
			n := &node{kind: nClass, pos: start}
			if p.peek(0) == '^' {
				n.negated = true
				p.pos++
			}
			for {
				if p.eof() {
					return nil, p.errAt(start, "unterminated character class")
				}
				if p.src[p.pos] == ']' {
					p.pos++
					break
				}
				lo, err := p.char()
				if err != nil {
					return nil, err
				}
				hi := lo
				if p.peek(0) == '-' && p.peek(1) != ']' && p.pos+1 < len(p.src) {
					p.pos++
					rpos := p.pos
					if hi, err = p.char(); err != nil {
						return nil, err
					}
					if hi < lo {
						return nil, p.errAt(rpos, "character range %q-%q is reversed", lo, hi)
					}
				}
				n.ranges = append(n.ranges, runeRange{lo, hi})
			}
			seq = append(seq, n)
			p.space(nested)
		case isWordChar(c):
			name := p.name()
			seq = append(seq, &node{kind: nRef, pos: start, name: name})
			p.space(nested)
		case c == '(':
			if p.depth >= maxDepth {
				return nil, p.errAt(start, "groups nested too deeply")
			}
			p.depth++
			p.pos++
			p.space(true)
			alts, err := p.alternates(true)
			if err != nil {
				return nil, err
			}
			p.depth--
			if p.peek(0) != ')' {
				return nil, p.errAt(p.pos, "expecting ')' to close the group opened at %s, found %s", p.where(start), p.describe())
			}
			p.pos++
			seq = append(seq, &node{kind: nGroup, pos: start, alts: alts})
			p.space(nested)
		case c == '.':
			p.pos++
			seq = append(seq, &node{kind: nAny, pos: start})
			p.space(nested)
		case c == '*' || c == '+' || c == '?' || c == '{':
			if len(seq) == 0 {
				return nil, p.errAt(start, "expecting an item before the repetition %q", c)
			}
			lo, hi := 0, -1
			p.pos++
			switch c {
			case '+':
				lo = 1
			case '?':
				hi = 1
			case '{':
				p.space(nested)
				var err error
				if lo, err = p.integer(); err != nil {
					return nil, err
				}
				p.space(nested)
				hi = lo
				if p.peek(0) == ',' {
					p.pos++
					p.space(nested)
					hi = -1
					if c := p.peek(0); c >= '0' && c <= '9' {
						if hi, err = p.integer(); err != nil {
							return nil, err
						}
						p.space(nested)
					}
				}
				if p.peek(0) != '}' {
					return nil, p.errAt(p.pos, "expecting '}' to close the repetition, found %s", p.describe())
				}
				p.pos++
				if hi >= 0 && hi < lo {
					return nil, p.errAt(start, "repetition {%d,%d} has its maximum below its minimum", lo, hi)
				}
			}
			last := seq[len(seq)-1]
			seq[len(seq)-1] = &node{kind: nRepeat, pos: start, sub: last, min: lo, max: hi}
			p.space(nested)
		default:
			return seq, nil
		}
	}
	return seq, nil
}

// where formats a source offset as "line L, column C".
func (p *parser) where(pos int) string {
	e := p.errAt(pos, "").(*SyntaxError)
	return fmt.Sprintf("line %d, column %d", e.Line, e.Column)
}

func (p *parser) integer() (int, error) {
	start := p.pos
	n := 0
	for c := p.peek(0); c >= '0' && c <= '9'; c = p.peek(0) {
		n = n*10 + int(c-'0')
		if n > maxRepeat {
			return 0, p.errAt(start, "repetition count above %d", maxRepeat)
		}
		p.pos++
	}
	if p.pos == start {
		return 0, p.errAt(p.pos, "expecting a number, found %s", p.describe())
	}
	return n, nil
}

// char reads one character of a literal or class, escapes resolved.
func (p *parser) char() (rune, error) {
	start := p.pos
	if p.src[p.pos] != '\\' {
		r, n := utf8.DecodeRuneInString(p.src[p.pos:])
		if r == utf8.RuneError && n == 1 {
			return 0, p.errAt(start, "invalid UTF-8")
		}
		p.pos += n
		return r, nil
	}
	p.pos++
	if p.eof() {
		return 0, p.errAt(start, "unexpected end of input after '\\'")
	}
	c := p.src[p.pos]
	p.pos++
	digits := 0
	switch c {
	case 'x':
		digits = 2
	case 'u':
		digits = 4
	case 'U':
		digits = 8
	case 't':
		return '\t', nil
	case 'r':
		return '\r', nil
	case 'n':
		return '\n', nil
	case '\\', '"', '[', ']':
		return rune(c), nil
	default:
		return 0, p.errAt(start, "unknown escape \\%c", c)
	}
	var v rune
	for range digits {
		d, ok := hexVal(p.peek(0))
		if !ok {
			return 0, p.errAt(start, "escape \\%c needs %d hex digits", c, digits)
		}
		v = v<<4 | rune(d)
		p.pos++
	}
	if v > utf8.MaxRune || v >= 0xD800 && v <= 0xDFFF {
		return 0, p.errAt(start, "escape \\%c%0*X is not a Unicode scalar value", c, digits, v)
	}
	return v, nil
}

func hexVal(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
