package tokenizer

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/qsf-llm/qsf/internal/testfiles"
)

func TestStoriesPrompts(t *testing.T) {
	dir := testfiles.Dir(t)
	tok := loadGGUFTokenizer(t, filepath.Join(dir, "models/gguf/stories260K-f32.gguf"))
	cases := []struct {
		text string
		want []int
	}{
		{"Once upon a time", []int{1, 403, 407, 261, 378}},
		{"Lily and Ben went to the park", []int{1, 317, 269, 368, 302, 263, 377, 267, 265, 282, 295, 433}},
		{"The little dog was", []int{1, 291, 376, 400, 428, 286}},
	}
	for _, c := range cases {
		got := tok.Encode(c.text, EncodeOptions{AddSpecial: true})
		if !slices.Equal(got, c.want) {
			t.Errorf("Encode(%q) = %v, want %v", c.text, got, c.want)
		}
		// Like llama_detokenize, the add_space_prefix space is removed only
		// when the first token is not BOS.
		if dec := tok.Decode(got[1:]); dec != c.text {
			t.Errorf("Decode(%v) = %q, want %q", got[1:], dec, c.text)
		}
		if dec := tok.Decode(got); dec != " "+c.text {
			t.Errorf("Decode(%v) = %q, want %q", got, dec, " "+c.text)
		}
	}
}
