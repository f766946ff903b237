package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/qsf-llm/qsf/internal/testfiles"
)

// TestSPMChunking checks that cutting the SPM input at boundaries no token
// spans gives the same ids as one merge pass over the whole text.
func TestSPMChunking(t *testing.T) {
	dir := testfiles.Dir(t)
	text, err := os.ReadFile(filepath.Join(dir, "models/corpus/war-and-peace.txt"))
	if err != nil {
		t.Skip(err)
	}
	sample := strings.ReplaceAll(" "+string(text[:200000])+" 世界 🦙 ½", " ", "▁")
	for _, name := range []string{"llama-spm", "phi-3", "baichuan"} {
		tok := loadGGUFTokenizer(t, filepath.Join(dir, "models/vocab/ggml-vocab-"+name+".gguf"))
		var a, b spmSession
		chunked := a.tokenize(tok, sample, nil)
		whole := b.chunk(tok, sample, nil)
		if !slices.Equal(chunked, whole) {
			t.Errorf("%s: chunked encoding differs from a single pass", name)
		}
	}
}

// TestLongWord encodes inputs that defeat pre-tokenization (one huge word,
// one huge whitespace run); a quadratic merge loop would not finish.
func TestLongWord(t *testing.T) {
	fams := loadFamilies(t)
	inputs := []string{strings.Repeat("a", 50000), strings.Repeat(" ", 50000) + "x", strings.Repeat("\n ", 25000)}
	for name, tok := range fams {
		for _, in := range inputs {
			ids := tok.Encode(in, EncodeOptions{})
			if got := tok.Detokenize(ids, false, false); tok.Model() == BPE && got != in && !tok.cleanSpaces {
				t.Errorf("%s: long input does not round-trip", name)
			}
		}
	}
}
