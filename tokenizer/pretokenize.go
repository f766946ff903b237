package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// A pre-tokenizer splits a fragment into words before BPE merging, as
// llama.cpp's unicode_regex_split: a list of stages, each splitting every
// current piece further. Each stage is a hand-written scanner equivalent to
// one of llama.cpp's regular expressions.

// span is a half-open range of rune indices.
type span struct{ start, end int }

// stage splits each span into consecutive sub-spans that cover it.
type stage func(p *pretok, in []span, out []span) []span

// pretokFn is a pre-tokenizer: its stages run in order.
type pretokFn []stage

// pretok holds the decoded text and scratch buffers.
type pretok struct {
	text  string
	runes []rune
	flags []uint8
	offs  []int // byte offset of each rune, plus len(text)
	valid bool
	a, b  []span
	words []string
}

// split returns the words of text.
func (p *pretok) split(fn pretokFn, text string) []string {
	p.text = text
	p.runes, p.flags, p.offs = p.runes[:0], p.flags[:0], p.offs[:0]
	p.valid = true
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		if r == utf8.RuneError && n <= 1 {
			p.valid = false
			n = 1
		}
		p.runes = append(p.runes, r)
		p.flags = append(p.flags, flagsOf(r))
		p.offs = append(p.offs, i)
		i += n
	}
	p.offs = append(p.offs, len(text))
	cur := append(p.a[:0], span{0, len(p.runes)})
	next := p.b[:0]
	for _, st := range fn {
		next = st(p, cur, next[:0])
		cur, next = next, cur
	}
	p.a, p.b = cur, next
	p.words = p.words[:0]
	for _, s := range cur {
		if s.end <= s.start {
			continue
		}
		if p.valid {
			p.words = append(p.words, text[p.offs[s.start]:p.offs[s.end]])
		} else {
			p.words = append(p.words, string(p.runes[s.start:s.end]))
		}
	}
	return p.words
}

// isSpaceAt reports whether rune i is whitespace (\s).
func (p *pretok) isSpaceAt(i int) bool { return p.flags[i]&fSpace != 0 }

// gpt2Stage is llama.cpp's unicode_regex_split_custom_gpt2:
// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
func gpt2Stage(p *pretok, in, out []span) []span {
	for _, s := range in {
		ini, end := s.start, s.end
		flag := func(i int) uint8 {
			if i >= ini && i < end {
				return p.flags[i]
			}
			return 0
		}
		prev := ini
		add := func(e int) int {
			n := e - prev
			if n > 0 {
				out = append(out, span{prev, e})
			}
			prev = e
			return n
		}
		for pos := ini; pos < end; {
			c := p.runes[pos]
			f := p.flags[pos]
			if c == '\'' && pos+1 < end {
				n := p.runes[pos+1]
				if n == 's' || n == 't' || n == 'm' || n == 'd' {
					pos += add(pos + 2)
					continue
				}
				if pos+2 < end {
					nn := p.runes[pos+2]
					if (n == 'r' && nn == 'e') || (n == 'v' && nn == 'e') || (n == 'l' && nn == 'l') {
						pos += add(pos + 3)
						continue
					}
				}
			}
			f2 := f
			if c == ' ' {
				f2 = flag(pos + 1)
				if f2&(fLetter|fNumber) != 0 || (f2&fSpace == 0 && f2 != 0) {
					pos++
				}
			}
			switch {
			case f2&fLetter != 0:
				for flag(pos)&fLetter != 0 {
					pos++
				}
				add(pos)
				continue
			case f2&fNumber != 0:
				for flag(pos)&fNumber != 0 {
					pos++
				}
				add(pos)
				continue
			case f2&(fSpace|fLetter|fNumber) == 0 && f2 != 0:
				for g := flag(pos); g&(fSpace|fLetter|fNumber) == 0 && g != 0; g = flag(pos) {
					pos++
				}
				add(pos)
				continue
			}
			ws := 0
			for flag(pos+ws)&fSpace != 0 {
				ws++
			}
			if ws > 1 && pos+ws < end {
				pos += ws - 1
				add(pos)
				continue
			}
			if ws > 0 {
				pos += ws
				add(pos)
				continue
			}
			pos++
			add(pos)
		}
	}
	return out
}

// llama3Stage returns llama.cpp's unicode_regex_split_custom_llama3
// (maxDigits 3) or unicode_regex_split_custom_qwen2 (maxDigits 1):
// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,max}|
// ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
func llama3Stage(maxDigits int) stage {
	return func(p *pretok, in, out []span) []span {
		for _, s := range in {
			ini, end := s.start, s.end
			flag := func(i int) uint8 {
				if i >= ini && i < end {
					return p.flags[i]
				}
				return 0
			}
			cpt := func(i int) rune {
				if i >= ini && i < end {
					return p.runes[i]
				}
				return -1
			}
			prev := ini
			add := func(e int) int {
				n := e - prev
				if n > 0 {
					out = append(out, span{prev, e})
				}
				prev = e
				return n
			}
			for pos := ini; pos < end; {
				c := p.runes[pos]
				f := p.flags[pos]
				if c == '\'' && pos+1 < end {
					n := unicode.ToLower(p.runes[pos+1])
					if n == 's' || n == 't' || n == 'm' || n == 'd' {
						pos += add(pos + 2)
						continue
					}
					if pos+2 < end {
						nn := unicode.ToLower(p.runes[pos+2])
						if (n == 'r' && nn == 'e') || (n == 'v' && nn == 'e') || (n == 'l' && nn == 'l') {
							pos += add(pos + 3)
							continue
						}
					}
				}
				if !(c == '\r' || c == '\n' || f&fNumber != 0) {
					if f&fLetter != 0 || flag(pos+1)&fLetter != 0 {
						pos++
						for flag(pos)&fLetter != 0 {
							pos++
						}
						add(pos)
						continue
					}
				}
				if f&fNumber != 0 {
					start := pos
					for flag(pos)&fNumber != 0 {
						pos++
						if pos-start >= maxDigits {
							add(pos)
							start = pos
						}
					}
					add(pos)
					continue
				}
				f2 := f
				if c == ' ' {
					f2 = flag(pos + 1)
				}
				if f2&(fSpace|fLetter|fNumber) == 0 && f != 0 {
					if c == ' ' {
						pos++
					}
					for f2&(fSpace|fLetter|fNumber) == 0 && f2 != 0 {
						pos++
						f2 = flag(pos)
					}
					for c2 := cpt(pos); c2 == '\r' || c2 == '\n'; c2 = cpt(pos) {
						pos++
					}
					add(pos)
					continue
				}
				ws, lastRN := 0, 0
				for flag(pos+ws)&fSpace != 0 {
					if c2 := cpt(pos + ws); c2 == '\r' || c2 == '\n' {
						lastRN = pos + ws + 1
					}
					ws++
				}
				if lastRN > 0 {
					pos = lastRN
					add(pos)
					continue
				}
				if ws > 1 && pos+ws < end {
					pos += ws - 1
					add(pos)
					continue
				}
				if ws > 0 {
					pos += ws
					add(pos)
					continue
				}
				pos++
				add(pos)
			}
		}
		return out
	}
}

// matcher returns the length of a match starting at rune pos within a
// span ending at end, or 0.
type matcher func(p *pretok, pos, end int) int

// regexStage runs a matcher like std::regex_iterator over each span: every
// match and every gap between matches becomes its own piece.
func regexStage(m matcher) stage {
	return func(p *pretok, in, out []span) []span {
		for _, s := range in {
			gap := s.start
			for pos := s.start; pos < s.end; {
				n := m(p, pos, s.end)
				if n == 0 {
					pos++
					continue
				}
				if pos > gap {
					out = append(out, span{gap, pos})
				}
				out = append(out, span{pos, pos + n})
				pos += n
				gap = pos
			}
			if gap < s.end {
				out = append(out, span{gap, s.end})
			}
		}
		return out
	}
}

// trailingSpaceStage is the regex \s+$: the whitespace run ending a span.
func trailingSpaceStage(p *pretok, in, out []span) []span {
	for _, s := range in {
		k := s.end
		for k > s.start && p.isSpaceAt(k-1) {
			k--
		}
		if k > s.start {
			out = append(out, span{s.start, k})
		}
		if k < s.end {
			out = append(out, span{k, s.end})
		}
	}
	return out
}

// class tests rune i of p.
type class func(p *pretok, i int) bool

func flagClass(mask uint8) class {
	return func(p *pretok, i int) bool { return p.flags[i]&mask != 0 }
}

// rangeClass matches runes in rs; non-ASCII whitespace never matches, as
// llama.cpp replaces it by U+000B before running std::wregex.
func rangeClass(rs []runeRange) class {
	var ascii [128]bool
	for c := range ascii {
		ascii[c] = inRanges(rune(c), rs)
	}
	return func(p *pretok, i int) bool {
		r := p.runes[i]
		if r < 0x80 {
			return ascii[r]
		}
		if p.flags[i]&fSpace != 0 {
			return false
		}
		return inRanges(r, rs)
	}
}

// punctOr matches \p{P} or one of the ASCII characters in extra.
func punctOr(extra string) class {
	return func(p *pretok, i int) bool {
		if p.flags[i]&fPunct != 0 && p.flags[i]&fSpace == 0 {
			return true
		}
		r := p.runes[i]
		for j := 0; j < len(extra); j++ {
			if r == rune(extra[j]) {
				return true
			}
		}
		return false
	}
}

// run matches [C]+.
func run(c class) matcher {
	return func(p *pretok, pos, end int) int {
		n := 0
		for pos+n < end && c(p, pos+n) {
			n++
		}
		return n
	}
}

// one matches [C].
func one(c class) matcher {
	return func(p *pretok, pos, end int) int {
		if c(p, pos) {
			return 1
		}
		return 0
	}
}

// optSpaceRun matches \s?[C]+.
func optSpaceRun(c class) matcher {
	r := run(c)
	return func(p *pretok, pos, end int) int {
		if p.isSpaceAt(pos) && pos+1 < end {
			if n := r(p, pos+1, end); n > 0 {
				return n + 1
			}
		}
		return r(p, pos, end)
	}
}

// crlf matches [\r\n].
func crlf(p *pretok, pos, end int) int {
	if r := p.runes[pos]; r == '\r' || r == '\n' {
		return 1
	}
	return 0
}

// threeDigits matches [0-9][0-9][0-9].
func threeDigits(p *pretok, pos, end int) int {
	if pos+3 > end {
		return 0
	}
	for i := pos; i < pos+3; i++ {
		if r := p.runes[i]; r < '0' || r > '9' {
			return 0
		}
	}
	return 3
}

var (
	isNumber = flagClass(fNumber)
	isLetter = flagClass(fLetter)
	isPunct  = punctOr("")
)

// preTokenizers maps llama.cpp pre-tokenizer types to their stages.
var (
	preGPT2    = pretokFn{gpt2Stage}
	preLlama3  = pretokFn{llama3Stage(3)}
	preQwen2   = pretokFn{llama3Stage(1)}
	preDefault = pretokFn{
		regexStage(run(punctOr("$+<=>^~|"))),
		gpt2Stage,
		regexStage(run(isNumber)),
		regexStage(threeDigits),
	}
	preFalcon = pretokFn{
		regexStage(run(punctOr("$+<=>^~|`"))),
		gpt2Stage,
		regexStage(threeDigits),
	}
	preStarcoder   = pretokFn{regexStage(one(isNumber)), gpt2Stage}
	preDeepseekLLM = pretokFn{
		regexStage(crlf),
		regexStage(optSpaceRun(rangeClass(deepseekLetters))),
		regexStage(optSpaceRun(rangeClass(deepseekPunct))),
		trailingSpaceStage,
		regexStage(run(rangeClass(cjkRanges))),
		regexStage(run(isNumber)),
	}
	preDeepseekCoder = pretokFn{
		regexStage(crlf),
		regexStage(optSpaceRun(isLetter)),
		regexStage(optSpaceRun(isPunct)),
		regexStage(run(rangeClass(cjkRanges))),
		regexStage(one(isNumber)),
	}
)

// setPre selects the pre-tokenizer and its flags from a tokenizer.ggml.pre
// name, as llama_vocab::impl::load.
func (t *Tokenizer) setPre(name string) error {
	switch name {
	case "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2":
		t.split, t.ignoreMerges, t.addBOS = preLlama3, true, true
	case "dbrx", "smaug-bpe", "chatglm-bpe", "glm4":
		t.split = preLlama3
		if name == "glm4" || name == "chatglm-bpe" {
			t.bos = -1
		}
	case "deepseek-llm":
		t.split, t.cleanSpaces = preDeepseekLLM, false
	case "deepseek-coder":
		t.split, t.cleanSpaces = preDeepseekCoder, false
	case "falcon":
		t.split = preFalcon
	case "mpt", "olmo", "jais", "exaone4":
		t.split = preGPT2
	case "gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum",
		"jina-v1-en", "jina-v2-code", "roberta-bpe":
		t.split = preGPT2
	case "trillion", "granite-docling":
		t.split, t.cleanSpaces = preGPT2, false
	case "starcoder", "refact", "codeshell", "exaone", "minerva-7b":
		t.split = preStarcoder
	case "command-r", "smollm":
		t.split, t.cleanSpaces = preStarcoder, false
	case "qwen2", "deepseek-r1-qwen", "kormo", "stablelm2", "megrez", "hunyuan":
		t.split = preQwen2
		if name != "stablelm2" && name != "megrez" {
			t.cleanSpaces = false
		}
	default:
		// "default", "gpt-neox" style vocabularies without a known name.
		t.split = preDefault
	}
	return nil
}
