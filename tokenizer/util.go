package tokenizer

import (
	"fmt"
	"strconv"
	"strings"
)

func errorf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...))
}

func itoa(i int) string { return strconv.Itoa(i) }

func toLowerASCII(s string) string { return strings.ToLower(s) }

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

const hexDigits = "0123456789ABCDEF"

// byteTokenText returns the SentencePiece byte token text "<0xNN>".
func byteTokenText(b byte) string {
	return string([]byte{'<', '0', 'x', hexDigits[b>>4], hexDigits[b&15], '>'})
}

// utf8Len is llama.cpp's unicode_len_utf8: the sequence length implied by a
// lead byte (continuation bytes count as 1).
func utf8Len(b byte) int {
	switch b >> 4 {
	case 0xC, 0xD:
		return 2
	case 0xE:
		return 3
	case 0xF:
		return 4
	}
	return 1
}
