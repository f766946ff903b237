package tokenizer

import "strings"

// fragment is a piece of the input: raw text (id < 0) or a special token.
// off is the byte offset of a raw fragment's text in the whole input.
type fragment struct {
	text string
	id   int
	off  int
}

// Encode converts text to token ids as llama_tokenize does.
func (t *Tokenizer) Encode(text string, opts EncodeOptions) []int {
	var frags []fragment
	if text != "" {
		var allow func(int, int) bool
		if opts.ParseSpecial {
			allow = allowAll
		}
		frags = t.partition(text, allow)
	}
	return t.encodeFragments(frags, opts.AddSpecial)
}

func allowAll(int, int) bool { return true }

// Segment is a piece of text for EncodeSegments.
type Segment struct {
	Text string
	// ParseSpecial lets control-token text in this segment (such as
	// "<|im_start|>") become the token; elsewhere it is plain text.
	ParseSpecial bool
}

// EncodeSegments encodes the concatenation of segs as Encode with
// ParseSpecial would, except that control tokens are matched only where
// their whole text lies within a segment whose ParseSpecial is set. The
// text between special tokens is tokenized as one piece across segment
// boundaries, so when no segment without ParseSpecial contains
// control-token text the ids equal Encode's on the joined text. This is
// how a chat prompt is tokenized: the template's markup is parsed for
// special tokens, the messages are not (a user typing "<|im_end|>" does
// not end the turn).
func (t *Tokenizer) EncodeSegments(segs []Segment, addSpecial bool) []int {
	var sb strings.Builder
	type span struct{ lo, hi int }
	var open []span
	for _, s := range segs {
		if s.ParseSpecial && s.Text != "" {
			if n := len(open); n > 0 && open[n-1].hi == sb.Len() {
				open[n-1].hi += len(s.Text)
			} else {
				open = append(open, span{sb.Len(), sb.Len() + len(s.Text)})
			}
		}
		sb.WriteString(s.Text)
	}
	text := sb.String()
	var frags []fragment
	if text != "" {
		frags = t.partition(text, func(lo, hi int) bool {
			for _, sp := range open {
				if lo >= sp.lo && hi <= sp.hi {
					return true
				}
			}
			return false
		})
	}
	return t.encodeFragments(frags, addSpecial)
}

// encodeFragments tokenizes partitioned text, adding BOS/EOS when
// addSpecial is set and the vocabulary asks for them.
func (t *Tokenizer) encodeFragments(frags []fragment, addSpecial bool) []int {
	n := 2
	for _, f := range frags {
		n += len(f.text)/3 + 1
	}
	out := make([]int, 0, n)
	switch t.model {
	case SPM:
		isPrevSpecial := true
		if addSpecial && t.addBOS && t.bos >= 0 {
			out = append(out, t.bos)
		}
		var s spmSession
		for _, f := range frags {
			if f.id >= 0 {
				out = append(out, f.id)
				isPrevSpecial = true
				continue
			}
			raw := f.text
			if t.addSpacePrefix && isPrevSpecial {
				raw = " " + raw
			}
			out = s.tokenize(t, strings.ReplaceAll(raw, " ", "▁"), out)
			isPrevSpecial = false
		}
		if addSpecial && t.addEOS && t.eos >= 0 {
			out = append(out, t.eos)
		}
	case BPE:
		if addSpecial && t.addBOS && t.bos >= 0 {
			out = append(out, t.bos)
		}
		var s bpeSession
		for _, f := range frags {
			if f.id >= 0 {
				out = append(out, f.id)
				continue
			}
			out = s.tokenize(t, f.text, out)
		}
		if addSpecial && t.addEOS && t.eos >= 0 {
			out = append(out, t.eos)
		}
	}
	return out
}

// isCSpace is C's isspace in the "C" locale.
func isCSpace(c byte) bool {
	return c == ' ' || (c >= '\t' && c <= '\r')
}

// partition splits text around special tokens as tokenizer_st_partition:
// for each candidate token (longest first) every raw fragment is split at
// each occurrence. Control and unknown tokens take part only where allow
// (nil: nowhere) accepts the byte range [lo, hi) of the occurrence in
// text; user-defined tokens always do.
func (t *Tokenizer) partition(text string, allow func(lo, hi int) bool) []fragment {
	frags := []fragment{{text: text, id: -1}}
	for _, id := range t.special {
		a := t.attrs[id]
		gated := a&(attrControl|attrUnknown) != 0
		if gated && allow == nil {
			continue
		}
		tok := t.tokens[id]
		if !strings.Contains(text, tok) {
			continue
		}
		// find returns the index in s (at offset off in text) of the next
		// occurrence of tok that may become the token, or -1.
		find := func(s string, off int) int {
			for from := 0; from < len(s); {
				i := strings.Index(s[from:], tok)
				if i < 0 {
					return -1
				}
				i += from
				if !gated || allow(off+i, off+i+len(tok)) {
					return i
				}
				from = i + 1
			}
			return -1
		}
		var next []fragment
		changed := false
		for _, f := range frags {
			if f.id >= 0 || !strings.Contains(f.text, tok) {
				next = append(next, f)
				continue
			}
			rest, off := f.text, f.off
			i := find(rest, off)
			if i < 0 {
				next = append(next, f)
				continue
			}
			changed = true
			for {
				if i < 0 {
					if rest != "" {
						next = append(next, fragment{text: rest, id: -1, off: off})
					}
					break
				}
				left := rest[:i]
				if a&attrLStrip != 0 {
					for len(left) > 0 && isCSpace(left[len(left)-1]) {
						left = left[:len(left)-1]
					}
				}
				if left != "" {
					next = append(next, fragment{text: left, id: -1, off: off})
				}
				next = append(next, fragment{id: id})
				rest, off = rest[i+len(tok):], off+i+len(tok)
				if a&attrRStrip != 0 {
					for len(rest) > 0 && isCSpace(rest[0]) {
						rest, off = rest[1:], off+1
					}
				}
				i = find(rest, off)
			}
		}
		if changed {
			frags = next
		}
	}
	return frags
}
