package tokenizer

// byteToUnicode is GPT-2's reversible byte -> character map: printable
// Latin-1 bytes map to themselves and the rest to U+0100 onwards.
var byteToUnicode [256]rune

// byteToUTF8 holds the UTF-8 encoding of byteToUnicode.
var byteToUTF8 [256]string

// unicodeToByte inverts byteToUnicode for runes below U+0144 (-1: none).
var unicodeToByte [0x144]int16

func init() {
	for i := range unicodeToByte {
		unicodeToByte[i] = -1
	}
	printable := func(b int) bool {
		return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
	}
	n := 0
	for b := 0; b < 256; b++ {
		r := rune(b)
		if !printable(b) {
			r = rune(256 + n)
			n++
		}
		byteToUnicode[b] = r
		byteToUTF8[b] = string(r)
		unicodeToByte[r] = int16(b)
	}
}

// encodeByteLevel maps every byte of s to its GPT-2 character.
func encodeByteLevel(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		dst = append(dst, byteToUTF8[s[i]]...)
	}
	return dst
}
