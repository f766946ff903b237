package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// Piece returns the text of one token as llama_token_to_piece with
// special=false: control and unknown tokens give "", SentencePiece byte
// tokens give their byte, "▁" becomes a space in SPM vocabularies, and
// byte-level BPE tokens are mapped back to bytes. The result may be a
// partial UTF-8 sequence.
func (t *Tokenizer) Piece(id int) string { return t.piece(id, false) }

// PieceSpecial is Piece with special=true: control and unknown tokens give
// their raw text.
func (t *Tokenizer) PieceSpecial(id int) string { return t.piece(id, true) }

func (t *Tokenizer) piece(id int, special bool) string {
	if id < 0 || id >= len(t.tokens) {
		return ""
	}
	a := t.attrs[id]
	if !special && a&(attrUnknown|attrControl) != 0 {
		return ""
	}
	text := t.tokens[id]
	if a&(attrUnknown|attrControl|attrUserDefined) != 0 {
		return text
	}
	switch t.model {
	case SPM:
		if a&attrNormal != 0 {
			return strings.ReplaceAll(text, "▁", " ")
		}
		if a&attrByte != 0 {
			if b, ok := parseByteToken(text); ok {
				return string([]byte{b})
			}
		}
	case BPE:
		if a&attrNormal != 0 {
			return decodeByteLevel(text)
		}
	}
	return ""
}

// parseByteToken reads the byte of "<0xNN>" (llama.cpp reads text[3:5]).
func parseByteToken(s string) (byte, bool) {
	if len(s) < 5 {
		return 0, false
	}
	hi, ok1 := hexVal(s[3])
	lo, ok2 := hexVal(s[4])
	if !ok1 {
		return 0, false
	}
	if !ok2 {
		return hi, true // strtol stops at the first non-hex digit
	}
	return hi<<4 | lo, true
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

// decodeByteLevel maps a byte-level BPE token back to its bytes, as
// llama_decode_text (characters outside the byte map are kept in a
// "[UNK_BYTE_0x..]" marker, as llama.cpp does).
func decodeByteLevel(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r < 0x144 {
			if v := unicodeToByte[r]; v >= 0 {
				b.WriteByte(byte(v))
				i += n
				continue
			}
		}
		b.WriteString("[UNK_BYTE_0x")
		for _, c := range []byte(s[i : i+n]) {
			b.WriteByte(strings.ToLower(hexDigits)[c>>4])
			b.WriteByte(strings.ToLower(hexDigits)[c&15])
		}
		b.WriteString(s)
		b.WriteString("]")
		i += n
	}
	return b.String()
}

// Decode converts ids to text as llama_detokenize with remove_special=false
// and unparse_special=false: the pieces are concatenated, the leading space
// added by add_space_prefix is removed from the first piece (unless the
// first token is BOS), and clean_up_tokenization_spaces is applied when the
// vocabulary asks for it.
func (t *Tokenizer) Decode(ids []int) string { return t.Detokenize(ids, false, false) }

// Detokenize is llama_detokenize. removeSpecial drops a leading BOS and a
// trailing EOS when the vocabulary adds them; unparseSpecial renders
// control tokens as their text.
func (t *Tokenizer) Detokenize(ids []int, removeSpecial, unparseSpecial bool) string {
	removeSpace := t.addSpacePrefix
	if removeSpecial && t.addBOS && len(ids) > 0 && ids[0] == t.bos {
		removeSpace = false
		ids = ids[1:]
	}
	if removeSpecial && t.addEOS && len(ids) > 0 && ids[len(ids)-1] == t.eos {
		ids = ids[:len(ids)-1]
	}
	var b []byte
	for _, id := range ids {
		p := t.piece(id, unparseSpecial)
		if removeSpace && len(p) > 0 && p[0] == ' ' {
			p = p[1:]
		}
		removeSpace = false
		b = append(b, p...)
	}
	if t.cleanSpaces {
		b = cleanSpaces(b)
	}
	return string(b)
}

// cleanSpaces is llama.cpp's clean_up_tokenization_spaces in three passes.
func cleanSpaces(text []byte) []byte {
	if len(text) == 0 {
		return text
	}
	// " ?", " !", " .", " ,"
	total := 1
	for i := 1; i < len(text); i++ {
		x := text[i]
		if text[i-1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',') {
			total--
		}
		text[total] = x
		total++
	}
	text = text[:total]
	// " ' " -> "'"
	total = 1
	for i := 1; i < len(text); i++ {
		x := text[i]
		if x == '\'' && i+1 < len(text) && text[i-1] == ' ' && text[i+1] == ' ' {
			total--
			i++ // drop the following space
		}
		text[total] = x
		total++
	}
	text = text[:total]
	// " 's", " 'm", " 're", " 've"
	total = 1
	for i := 1; i < len(text); i++ {
		x := text[i]
		if text[i-1] == ' ' && x == '\'' && i+1 < len(text) {
			x1 := text[i+1]
			if x1 == 's' || x1 == 'm' {
				total--
			} else if i+2 < len(text) && x1 != 't' && x1 != 'd' {
				x2 := text[i+2]
				if (x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e') {
					total--
				}
			}
		}
		text[total] = x
		total++
	}
	return text[:total]
}

// StreamDecoder turns a stream of token ids into valid UTF-8 text without
// ever splitting a character: bytes of an incomplete character are held
// back until the rest arrives, and bytes that cannot form a character
// become U+FFFD (one per invalid run within a Push).
type StreamDecoder struct {
	t       *Tokenizer
	pending []byte
}

// NewStreamDecoder returns a decoder that emits Piece text.
func (t *Tokenizer) NewStreamDecoder() *StreamDecoder { return &StreamDecoder{t: t} }

// Push adds one token and returns the text that is now complete, always
// valid UTF-8.
func (d *StreamDecoder) Push(id int) string {
	d.pending = append(d.pending, d.t.Piece(id)...)
	n := completePrefix(d.pending)
	out := strings.ToValidUTF8(string(d.pending[:n]), "\uFFFD")
	d.pending = append(d.pending[:0], d.pending[n:]...)
	return out
}

// Flush returns whatever is held back, an incomplete character becoming
// U+FFFD, and resets the decoder.
func (d *StreamDecoder) Flush() string {
	out := strings.ToValidUTF8(string(d.pending), "\uFFFD")
	d.pending = d.pending[:0]
	return out
}

// completePrefix returns the length of the longest prefix of b that does not
// end inside a UTF-8 sequence that could still be completed. Bytes that can
// never become valid are released at once.
func completePrefix(b []byte) int {
	// Look back at most 3 bytes for the start of a possibly partial sequence.
	for k := 1; k <= 3 && k <= len(b); k++ {
		c := b[len(b)-k]
		if c < 0x80 {
			return len(b)
		}
		if c >= 0xC0 {
			if c >= 0xF8 {
				return len(b) // never valid
			}
			if utf8Len(c) > k && !utf8.FullRune(b[len(b)-k:]) {
				return len(b) - k
			}
			return len(b)
		}
	}
	return len(b)
}
