package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/qsf-llm/qsf/internal/testfiles"
)

// vectorCase is one llama.cpp test-tokenizer-0 case.
type vectorCase struct {
	text string
	ids  []int
}

// readVectors reads a .inp/.out pair (cases split by
// "\n__ggml_vocab_test__\n", one line of ids per case).
func readVectors(t testing.TB, base string) []vectorCase {
	t.Helper()
	inp, err := os.ReadFile(base + ".inp")
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(base + ".out")
	if err != nil {
		t.Fatal(err)
	}
	texts := strings.Split(string(inp), "\n__ggml_vocab_test__\n")
	if n := len(texts); n > 0 && texts[n-1] == "" {
		texts = texts[:n-1]
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(texts) {
		t.Fatalf("%s: %d inputs, %d outputs", base, len(texts), len(lines))
	}
	cases := make([]vectorCase, len(texts))
	for i, text := range texts {
		cases[i].text = text
		for _, f := range strings.Fields(lines[i]) {
			id, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("%s.out line %d: %v", base, i+1, err)
			}
			cases[i].ids = append(cases[i].ids, id)
		}
	}
	return cases
}

// checkVectors encodes every case and reports the pass count.
func checkVectors(t *testing.T, tok *Tokenizer, base string) {
	cases := readVectors(t, base)
	pass, roundTrip := 0, 0
	for _, c := range cases {
		got := tok.Encode(c.text, EncodeOptions{})
		if slices.Equal(got, c.ids) {
			pass++
		} else {
			t.Errorf("%s: Encode(%q)\n got %v\nwant %v", filepath.Base(base), c.text, got, c.ids)
		}
		if tok.Decode(c.ids) == c.text {
			roundTrip++
		}
	}
	t.Logf("%s: %d/%d cases pass, %d/%d decode to the input", filepath.Base(base), pass, len(cases), roundTrip, len(cases))
}

func TestVocabVectors(t *testing.T) {
	dir := filepath.Join(testfiles.Dir(t), "models/vocab")
	ggufs, _ := filepath.Glob(filepath.Join(dir, "*.gguf"))
	if len(ggufs) == 0 {
		t.Skip("no vocab GGUFs")
	}
	for _, g := range ggufs {
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(g), "ggml-vocab-"), ".gguf")
		t.Run(name, func(t *testing.T) {
			tok := loadGGUFTokenizer(t, g)
			if _, err := os.Stat(g + ".inp"); err != nil {
				t.Skipf("no test vectors for %s", name)
			}
			checkVectors(t, tok, g)
		})
	}
}
