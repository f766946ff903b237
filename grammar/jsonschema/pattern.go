package jsonschema

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ErrPattern is wrapped by the errors for regular expressions outside the
// supported subset: literals, ".", classes ("[a-z]", "[^...]", \d \w \s
// and their negations), groups ("(...)", "(?:...)"), alternation, the
// quantifiers * + ? {n} {n,} {n,m} (lazy forms generate the same), and ^
// and $ at the ends. Characters a JSON string must escape are left out of
// classes; literal ones are generated escaped.
var ErrPattern = errors.New("unsupported regular expression")

type reParser struct {
	src string
	pos int
}

func (p *reParser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: %q at offset %d: %s", ErrPattern, p.src, p.pos, fmt.Sprintf(format, args...))
}

// patternToGBNF returns a GBNF expression for JSON string contents
// matching re.
func patternToGBNF(re string) (string, error) {
	re = strings.TrimPrefix(re, "^")
	if strings.HasSuffix(re, "$") && !strings.HasSuffix(re, `\$`) {
		re = re[:len(re)-1]
	}
	p := &reParser{src: re}
	e, err := p.alternation(0)
	if err != nil {
		return "", err
	}
	if p.pos < len(p.src) {
		return "", p.errorf("unexpected %q", p.src[p.pos])
	}
	if e == "" {
		return `""`, nil
	}
	return e, nil
}

func (p *reParser) alternation(depth int) (string, error) {
	if depth > 100 {
		return "", p.errorf("groups nested too deeply")
	}
	var alts []string
	for {
		seq, err := p.sequence(depth)
		if err != nil {
			return "", err
		}
		if seq == "" {
			seq = `""`
		}
		alts = append(alts, seq)
		if p.pos < len(p.src) && p.src[p.pos] == '|' {
			p.pos++
			continue
		}
		if len(alts) == 1 {
			return alts[0], nil
		}
		return "( " + strings.Join(alts, " | ") + " )", nil
	}
}

func (p *reParser) sequence(depth int) (string, error) {
	var items []string
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		var atom string
		switch c {
		case '|', ')':
			return strings.Join(items, " "), nil
		case '(':
			p.pos++
			if strings.HasPrefix(p.src[p.pos:], "?:") {
				p.pos += 2
			} else if p.pos < len(p.src) && p.src[p.pos] == '?' {
				return "", p.errorf("lookaround and named groups are not supported")
			}
			inner, err := p.alternation(depth + 1)
			if err != nil {
				return "", err
			}
			if p.pos >= len(p.src) || p.src[p.pos] != ')' {
				return "", p.errorf("missing )")
			}
			p.pos++
			atom = "( " + inner + " )"
		case '[':
			var err error
			if atom, err = p.class(); err != nil {
				return "", err
			}
		case '.':
			p.pos++
			atom = classExpr([]rr{{0, '\n' - 1}, {'\n' + 1, utf8.MaxRune}}, false)
		case '^', '$':
			return "", p.errorf("anchors are supported only at the ends")
		case '*', '+', '?', '{':
			return "", p.errorf("quantifier without an item")
		case '\\':
			ranges, neg, lit, err := p.escape()
			if err != nil {
				return "", err
			}
			if ranges != nil {
				atom = classExpr(ranges, neg)
			} else {
				atom = literal(lit)
			}
		default:
			r, n := utf8.DecodeRuneInString(p.src[p.pos:])
			p.pos += n
			atom = literal(r)
		}
		q, err := p.quantifier()
		if err != nil {
			return "", err
		}
		if q != "" {
			atom = "( " + atom + " )" + q
		}
		items = append(items, atom)
	}
	return strings.Join(items, " "), nil
}

func (p *reParser) quantifier() (string, error) {
	if p.pos >= len(p.src) {
		return "", nil
	}
	var q string
	switch p.src[p.pos] {
	case '*', '+', '?':
		q = p.src[p.pos : p.pos+1]
		p.pos++
	case '{':
		end := strings.IndexByte(p.src[p.pos:], '}')
		if end < 0 {
			return "", p.errorf("unclosed {")
		}
		body := p.src[p.pos+1 : p.pos+end]
		var lo, hi int
		var err error
		switch {
		case !strings.Contains(body, ","):
			_, err = fmt.Sscanf(body, "%d", &lo)
			hi = lo
		case strings.HasSuffix(body, ","):
			_, err = fmt.Sscanf(body, "%d,", &lo)
			hi = -1
		default:
			_, err = fmt.Sscanf(body, "%d,%d", &lo, &hi)
		}
		if err != nil || lo < 0 || lo > 4096 || hi > 4096 || hi >= 0 && hi < lo {
			return "", p.errorf("bad repetition {%s}", body)
		}
		p.pos += end + 1
		q = repeat(lo, hi)
		if q == "" {
			q = "{1}"
		}
	default:
		return "", nil
	}
	if p.pos < len(p.src) && (p.src[p.pos] == '?' || p.src[p.pos] == '+') { // lazy or possessive
		p.pos++
	}
	return q, nil
}

type rr struct{ lo, hi rune }

var (
	digitRanges = []rr{{'0', '9'}}
	wordRanges  = []rr{{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}
	spaceRanges = []rr{{'\t', '\r'}, {' ', ' '}}
)

// escape reads a backslash escape: a class (ranges, negated) or a literal.
func (p *reParser) escape() ([]rr, bool, rune, error) {
	p.pos++
	if p.pos >= len(p.src) {
		return nil, false, 0, p.errorf("trailing backslash")
	}
	c := p.src[p.pos]
	p.pos++
	switch c {
	case 'd', 'D':
		return digitRanges, c == 'D', 0, nil
	case 'w', 'W':
		return wordRanges, c == 'W', 0, nil
	case 's', 'S':
		return spaceRanges, c == 'S', 0, nil
	case 'n':
		return nil, false, '\n', nil
	case 't':
		return nil, false, '\t', nil
	case 'r':
		return nil, false, '\r', nil
	case 'f':
		return nil, false, '\f', nil
	case 'v':
		return nil, false, '\v', nil
	}
	if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
		return nil, false, 0, p.errorf("escape \\%c is not supported", c)
	}
	r, n := utf8.DecodeRuneInString(p.src[p.pos-1:])
	p.pos += n - 1
	return nil, false, r, nil
}

func (p *reParser) class() (string, error) {
	p.pos++ // [
	neg := false
	if p.pos < len(p.src) && p.src[p.pos] == '^' {
		neg = true
		p.pos++
	}
	var ranges []rr
	first := true
	for {
		if p.pos >= len(p.src) {
			return "", p.errorf("unclosed [")
		}
		if p.src[p.pos] == ']' && !first {
			p.pos++
			break
		}
		first = false
		lo, set, err := p.classChar()
		if err != nil {
			return "", err
		}
		if set != nil {
			ranges = append(ranges, set...)
			continue
		}
		hi := lo
		if p.pos+1 < len(p.src) && p.src[p.pos] == '-' && p.src[p.pos+1] != ']' {
			p.pos++
			var set2 []rr
			if hi, set2, err = p.classChar(); err != nil {
				return "", err
			}
			if set2 != nil || hi < lo {
				return "", p.errorf("bad range in class")
			}
		}
		ranges = append(ranges, rr{lo, hi})
	}
	return classExpr(ranges, neg), nil
}

// classChar reads one class member: a character or an escaped class.
func (p *reParser) classChar() (rune, []rr, error) {
	if p.src[p.pos] == '\\' {
		ranges, neg, lit, err := p.escape()
		if err != nil {
			return 0, nil, err
		}
		if ranges != nil {
			if neg {
				return 0, complement(ranges), nil
			}
			return 0, ranges, nil
		}
		return lit, nil, nil
	}
	r, n := utf8.DecodeRuneInString(p.src[p.pos:])
	p.pos += n
	return r, nil, nil
}

func complement(in []rr) []rr {
	var out []rr
	next := rune(0)
	for _, r := range sortMerge(in) {
		if r.lo > next {
			out = append(out, rr{next, r.lo - 1})
		}
		next = r.hi + 1
	}
	if next <= utf8.MaxRune {
		out = append(out, rr{next, utf8.MaxRune})
	}
	return out
}

func sortMerge(in []rr) []rr {
	rs := append([]rr(nil), in...)
	for i := 1; i < len(rs); i++ { // insertion sort: classes are short
		for j := i; j > 0 && rs[j].lo < rs[j-1].lo; j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
	var out []rr
	for _, r := range rs {
		if n := len(out); n > 0 && r.lo <= out[n-1].hi+1 {
			out[n-1].hi = max(out[n-1].hi, r.hi)
			continue
		}
		out = append(out, r)
	}
	return out
}

// classExpr returns a GBNF class for the ranges (complemented when neg)
// without the characters a JSON string must escape.
func classExpr(ranges []rr, neg bool) string {
	if neg {
		ranges = complement(ranges)
	}
	// Remove 0x00-0x1F, '"', '\\' and 0x7F.
	forbidden := []rr{{0, 0x1F}, {'"', '"'}, {'\\', '\\'}, {0x7F, 0x7F}}
	allowed := intersect(sortMerge(ranges), complement(forbidden))
	if len(allowed) == 0 {
		return `[^\x00-\U0010FFFF]` // matches nothing
	}
	var b strings.Builder
	b.WriteByte('[')
	for _, r := range allowed {
		b.WriteString(classRune(r.lo))
		if r.hi != r.lo {
			b.WriteByte('-')
			b.WriteString(classRune(r.hi))
		}
	}
	b.WriteByte(']')
	return b.String()
}

func intersect(a, b []rr) []rr {
	var out []rr
	for _, x := range a {
		for _, y := range b {
			lo, hi := max(x.lo, y.lo), min(x.hi, y.hi)
			if lo <= hi {
				out = append(out, rr{lo, hi})
			}
		}
	}
	return out
}

func classRune(r rune) string {
	if r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
		return string(r)
	}
	if r < 0x10000 {
		return fmt.Sprintf(`\u%04X`, r)
	}
	return fmt.Sprintf(`\U%08X`, r)
}

// literal returns GBNF matching the JSON-escaped form of r.
func literal(r rune) string {
	switch {
	case r == '"':
		return `"\\\""`
	case r == '\\':
		return `"\\\\"`
	case r == '\n':
		return `"\\n"`
	case r == '\t':
		return `"\\t"`
	case r == '\r':
		return `"\\r"`
	case r < 0x20:
		return fmt.Sprintf(`"\\u%04x"`, r)
	}
	return gbnfString(string(r))
}
