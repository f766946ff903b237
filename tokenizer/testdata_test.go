package tokenizer

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/qsf-llm/qsf/format"
)

// testdata returns the shared test-data directory or skips the test.
func testdata(t testing.TB) string {
	dir := os.Getenv("QSF_TESTDATA")
	if dir == "" {
		wd, _ := os.Getwd()
		for d := wd; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				dir = filepath.Join(d, "..", "shared")
				break
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "models")); err != nil {
		t.Skipf("test data not found at %q (set QSF_TESTDATA): %v", dir, err)
	}
	return dir
}

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
