package jsonschema

import (
	"math"
	"strconv"
	"strings"
)

// maxDigits caps the digits of an unbounded integer (as llama.cpp's JSON
// grammars do).
const maxDigits = 16

// intRange returns a GBNF expression for the decimal integers in [lo, hi]
// (no leading zeros, no "-0"); math.MinInt64 and math.MaxInt64 stand for
// no bound.
func intRange(lo, hi int64) string {
	var alts []string
	if lo < 0 {
		a := int64(1)
		if hi < 0 {
			a = -hi
		}
		b := int64(math.MaxInt64)
		if lo != math.MinInt64 {
			b = -lo
		}
		alts = append(alts, `"-" `+natRange(a, b))
	}
	if hi >= 0 {
		alts = append(alts, natRange(max(lo, 0), hi))
	}
	return group(alts)
}

func group(alts []string) string {
	if len(alts) == 1 {
		return alts[0]
	}
	return "( " + strings.Join(alts, " | ") + " )"
}

// natRange is intRange for 0 ≤ a ≤ b; b = math.MaxInt64 means no bound.
func natRange(a, b int64) string {
	var alts []string
	da := len(strconv.FormatInt(a, 10))
	if b == math.MaxInt64 {
		alts = append(alts, finiteRange(a, pow10(da)-1))
		if da < maxDigits {
			alts = append(alts, `[1-9] [0-9]`+repeat(da, maxDigits-1))
		}
		return group(alts)
	}
	return finiteRange(a, b)
}

func pow10(n int) int64 {
	p := int64(1)
	for range n {
		p *= 10
	}
	return p
}

// finiteRange splits [a, b] by number of digits.
func finiteRange(a, b int64) string {
	var alts []string
	for d := len(strconv.FormatInt(a, 10)); d <= len(strconv.FormatInt(b, 10)); d++ {
		lo, hi := max(a, pow10(d-1)), min(b, pow10(d)-1)
		if d == 1 {
			lo = a
		}
		if lo <= hi {
			alts = append(alts, sameLength(strconv.FormatInt(lo, 10), strconv.FormatInt(hi, 10)))
		}
	}
	return group(alts)
}

// sameLength matches the digit strings from x to y, both of one length.
func sameLength(x, y string) string {
	if x == y {
		return `"` + x + `"`
	}
	if len(x) == 1 {
		return "[" + x + "-" + y + "]"
	}
	if x[0] == y[0] {
		return `"` + x[:1] + `" ` + sameLength(x[1:], y[1:])
	}
	n := len(x) - 1
	lowFull := x[1:] == strings.Repeat("0", n)
	highFull := y[1:] == strings.Repeat("9", n)
	var alts []string
	loD, hiD := x[0], y[0]
	if !lowFull {
		alts = append(alts, `"`+x[:1]+`" `+sameLength(x[1:], strings.Repeat("9", n)))
		loD++
	}
	var tail string
	if !highFull {
		tail = `"` + y[:1] + `" ` + sameLength(strings.Repeat("0", n), y[1:])
		hiD--
	}
	if loD <= hiD {
		class := "[" + string(loD) + "-" + string(hiD) + "]"
		if loD == hiD {
			class = `"` + string(loD) + `"`
		}
		alts = append(alts, class+` [0-9]`+repeat(n, n))
	}
	if tail != "" {
		alts = append(alts, tail)
	}
	return group(alts)
}
