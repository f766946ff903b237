package tokenizer

import (
	"sync"
	"unicode"
)

// Character class flags, as llama.cpp's unicode_cpt_flags: one general
// category group per code point plus the White_Space property. A code point
// with no flags is unassigned.
const (
	fLetter uint8 = 1 << iota
	fNumber
	fPunct
	fSymbol
	fMark
	fSpace
	fControl
	fSeparator
)

var (
	bmpFlagsOnce sync.Once
	bmpFlags     []uint8
)

func computeFlags(r rune) uint8 {
	var f uint8
	switch {
	case unicode.IsLetter(r):
		f = fLetter
	case unicode.IsNumber(r):
		f = fNumber
	case unicode.IsPunct(r):
		f = fPunct
	case unicode.IsSymbol(r):
		f = fSymbol
	case unicode.IsMark(r):
		f = fMark
	case unicode.In(r, unicode.Z):
		f = fSeparator
	case unicode.In(r, unicode.C):
		f = fControl
	}
	if unicode.IsSpace(r) {
		f |= fSpace
	}
	return f
}

// flagsOf returns the class flags of r.
func flagsOf(r rune) uint8 {
	if r < 0x10000 {
		bmpFlagsOnce.Do(func() {
			bmpFlags = make([]uint8, 0x10000)
			for i := range bmpFlags {
				bmpFlags[i] = computeFlags(rune(i))
			}
		})
		if r < 0 {
			return 0
		}
		return bmpFlags[r]
	}
	return computeFlags(r)
}

// runeRange is an inclusive code point range.
type runeRange struct{ lo, hi rune }

func inRanges(r rune, rs []runeRange) bool {
	for _, x := range rs {
		if r >= x.lo && r <= x.hi {
			return true
		}
	}
	return false
}

// parseClass reads a bracket-expression body made of single characters and
// "a-b" ranges (no escapes).
func parseClass(s string) []runeRange {
	rs := []rune(s)
	var out []runeRange
	for i := 0; i < len(rs); i++ {
		if i+2 < len(rs) && rs[i+1] == '-' {
			out = append(out, runeRange{rs[i], rs[i+2]})
			i += 2
			continue
		}
		out = append(out, runeRange{rs[i], rs[i]})
	}
	return out
}

// deepseekLetters is the letter class of the deepseek-llm pre-tokenizer.
var deepseekLetters = parseClass("A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ\U00010400-\U0001044f𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃")

// deepseekPunct is the punctuation class of the deepseek-llm pre-tokenizer.
var deepseekPunct = []runeRange{{0x21, 0x2F}, {0x3A, 0x7E}, {0xFF01, 0xFF0F}, {0xFF1A, 0xFF5E}, {0x2018, 0x201F}, {0x3000, 0x3002}}

// cjkRanges is the "[一-龥ࠀ-一가-퟿]" class of the deepseek pre-tokenizers.
var cjkRanges = []runeRange{{0x4E00, 0x9FA5}, {0x0800, 0x4E00}, {0xAC00, 0xD7FF}}
