package tokenizer

import (
	"testing"

	"github.com/qsf-llm/qsf/format"
)

// ggufTokenizer builds the tokenizer of the GGUF file at path.
func ggufTokenizer(path string) (*Tokenizer, error) {
	f, err := format.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return FromGGUF(&f.Metadata)
}

// loadGGUFTokenizer is ggufTokenizer for a file the test needs.
func loadGGUFTokenizer(t testing.TB, path string) *Tokenizer {
	t.Helper()
	tok, err := ggufTokenizer(path)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
