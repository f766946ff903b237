package tokenizer

import (
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/qsf-llm/qsf/internal/testfiles"
)

func TestStreamDecoder(t *testing.T) {
	dir := testfiles.Dir(t)
	for _, name := range []string{"llama-spm", "gpt-2"} {
		tok := loadGGUFTokenizer(t, filepath.Join(dir, "models/vocab/ggml-vocab-"+name+".gguf"))
		text := "héllo 世界 🙂🦙 ok"
		ids := tok.Encode(text, EncodeOptions{})
		d := tok.NewStreamDecoder()
		var b strings.Builder
		partial := false
		for _, id := range ids {
			s := d.Push(id)
			if !utf8.ValidString(s) {
				t.Errorf("%s: Push(%d) = %q: broken UTF-8", name, id, s)
			}
			if s == "" && tok.Piece(id) != "" {
				partial = true
			}
			b.WriteString(s)
		}
		b.WriteString(d.Flush())
		want := strings.Join(pieces(tok, ids), "")
		if b.String() != want {
			t.Errorf("%s: stream = %q, want %q", name, b.String(), want)
		}
		if !partial {
			t.Errorf("%s: no token was held back; the test does not exercise partial UTF-8", name)
		}
	}
}

func pieces(tok *Tokenizer, ids []int) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = tok.Piece(id)
	}
	return out
}

func TestPieceSpecial(t *testing.T) {
	dir := testfiles.Dir(t)
	tok := loadGGUFTokenizer(t, filepath.Join(dir, "models/vocab/ggml-vocab-llama-spm.gguf"))
	if got := tok.Piece(tok.BOS()); got != "" {
		t.Errorf("Piece(BOS) = %q, want empty", got)
	}
	if got := tok.PieceSpecial(tok.BOS()); got != "<s>" {
		t.Errorf("PieceSpecial(BOS) = %q", got)
	}
	nl, ok := tok.Lookup("<0x0A>")
	if !ok || tok.Piece(nl) != "\n" {
		t.Errorf("byte token <0x0A> = %d %q", nl, tok.Piece(nl))
	}
	// "<s>" is text unless ParseSpecial is set.
	if ids := tok.Encode("<s>", EncodeOptions{ParseSpecial: true}); len(ids) != 1 || ids[0] != tok.BOS() {
		t.Errorf("ParseSpecial <s> = %v", ids)
	}
	if ids := tok.Encode("<s>", EncodeOptions{}); len(ids) < 2 {
		t.Errorf("plain <s> = %v", ids)
	}
	if got := tok.Encode("Hello world", EncodeOptions{AddSpecial: true}); len(got) != 3 || got[0] != 1 || got[1] != 15043 || got[2] != 3186 {
		t.Errorf("Hello world = %v, want [1 15043 3186]", got)
	}
	if !tok.IsEOG(tok.EOS()) || tok.IsEOG(tok.BOS()) {
		t.Errorf("IsEOG wrong")
	}
}
