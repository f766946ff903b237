package grammar

import (
	"slices"
	"unicode/utf8"
)

// normalizeRanges sorts and merges code point ranges, complements them when
// negated, and removes the surrogates, which UTF-8 cannot encode.
func normalizeRanges(in []runeRange, negated bool) []runeRange {
	rs := slices.Clone(in)
	slices.SortFunc(rs, func(a, b runeRange) int { return int(a.lo) - int(b.lo) })
	var merged []runeRange
	for _, r := range rs {
		if n := len(merged); n > 0 && r.lo <= merged[n-1].hi+1 {
			merged[n-1].hi = max(merged[n-1].hi, r.hi)
			continue
		}
		merged = append(merged, r)
	}
	if negated {
		var comp []runeRange
		next := rune(0)
		for _, r := range merged {
			if r.lo > next {
				comp = append(comp, runeRange{next, r.lo - 1})
			}
			next = r.hi + 1
		}
		if next <= utf8.MaxRune {
			comp = append(comp, runeRange{next, utf8.MaxRune})
		}
		merged = comp
	}
	var out []runeRange
	for _, r := range merged {
		if r.hi < 0xD800 || r.lo > 0xDFFF {
			out = append(out, r)
			continue
		}
		if r.lo < 0xD800 {
			out = append(out, runeRange{r.lo, 0xD7FF})
		}
		if r.hi > 0xDFFF {
			out = append(out, runeRange{0xE000, r.hi})
		}
	}
	return out
}

// byteRange is an inclusive range of byte values.
type byteRange struct{ lo, hi byte }

// utf8Sequences splits a code point range into ranges whose UTF-8 encodings
// are all the same length and differ only in a suffix of full continuation
// ranges, and calls emit with the byte range of each position. Together the
// sequences match exactly the encodings of the code points in [lo, hi].
func utf8Sequences(lo, hi rune, emit func([]byteRange)) {
	// Split at the encoding length boundaries.
	for _, limit := range []rune{0x7F, 0x7FF, 0xFFFF} {
		if lo <= limit && hi > limit {
			utf8Sequences(lo, limit, emit)
			utf8Sequences(limit+1, hi, emit)
			return
		}
	}
	if hi < 0x80 {
		emit([]byteRange{{byte(lo), byte(hi)}})
		return
	}
	// Split until all but a prefix of the bytes cover full continuation
	// ranges: for each suffix length i, lo must start and hi must end a
	// block of 64^i code points, or share the prefix above it.
	n := utf8.RuneLen(lo)
	for i := 1; i < n; i++ {
		m := rune(1)<<(6*i) - 1
		if lo&^m != hi&^m {
			if lo&m != 0 {
				utf8Sequences(lo, lo|m, emit)
				utf8Sequences((lo|m)+1, hi, emit)
				return
			}
			if hi&m != m {
				utf8Sequences(lo, (hi&^m)-1, emit)
				utf8Sequences(hi&^m, hi, emit)
				return
			}
		}
	}
	var a, b [utf8.UTFMax]byte
	utf8.EncodeRune(a[:], lo)
	utf8.EncodeRune(b[:], hi)
	seq := make([]byteRange, n)
	for i := range n {
		seq[i] = byteRange{a[i], b[i]}
	}
	emit(seq)
}
