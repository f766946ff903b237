package tokenizer

import "strings"

// fragment is a piece of the input: raw text (id < 0) or a special token.
type fragment struct {
	text string
	id   int
}

// Encode converts text to token ids as llama_tokenize does.
func (t *Tokenizer) Encode(text string, opts EncodeOptions) []int {
	var frags []fragment
	if text != "" {
		frags = t.partition(text, opts.ParseSpecial)
	}
	out := make([]int, 0, len(text)/3+2)
	switch t.model {
	case SPM:
		isPrevSpecial := true
		if opts.AddSpecial && t.addBOS && t.bos >= 0 {
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
		if opts.AddSpecial && t.addEOS && t.eos >= 0 {
			out = append(out, t.eos)
		}
	case BPE:
		if opts.AddSpecial && t.addBOS && t.bos >= 0 {
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
		if opts.AddSpecial && t.addEOS && t.eos >= 0 {
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
// each occurrence. Control and unknown tokens take part only when
// parseSpecial is set; user-defined tokens always do.
func (t *Tokenizer) partition(text string, parseSpecial bool) []fragment {
	frags := []fragment{{text: text, id: -1}}
	for _, id := range t.special {
		a := t.attrs[id]
		if !parseSpecial && a&(attrControl|attrUnknown) != 0 {
			continue
		}
		tok := t.tokens[id]
		if !strings.Contains(text, tok) {
			continue
		}
		var next []fragment
		changed := false
		for _, f := range frags {
			if f.id >= 0 || !strings.Contains(f.text, tok) {
				next = append(next, f)
				continue
			}
			changed = true
			rest := f.text
			for {
				i := strings.Index(rest, tok)
				if i < 0 {
					if rest != "" {
						next = append(next, fragment{text: rest, id: -1})
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
					next = append(next, fragment{text: left, id: -1})
				}
				next = append(next, fragment{id: id})
				rest = rest[i+len(tok):]
				if a&attrRStrip != 0 {
					for len(rest) > 0 && isCSpace(rest[0]) {
						rest = rest[1:]
					}
				}
			}
		}
		if changed {
			frags = next
		}
	}
	return frags
}
