package grammar

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/qsf-llm/qsf/internal/testfiles"
)

// FuzzParse checks that any text either compiles or gives a positioned
// error, and that a compiled grammar can be matched against input.
func FuzzParse(f *testing.F) {
	f.Add(`root ::= "a" [b-d]* (e | "f"){1,3}`+"\ne ::= [^x] .\n", "abcf")
	f.Add("root ::= x?\nx ::= \"\\u00e9\" # c\n", "é")
	if dir, ok := testfiles.Find(); ok {
		files, _ := filepath.Glob(filepath.Join(dir, "reference", "grammars", "*.gbnf"))
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(string(b), `{"a": [1, "b"]}`)
			}
		}
	}
	f.Fuzz(func(t *testing.T, text, input string) {
		g, err := Parse(text)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) && !errors.Is(err, ErrNoRoot) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("error without a position: %v", err)
			}
			return
		}
		m := NewMatcher(g)
		for i := 0; i < len(input); i++ {
			if !m.Accept([]byte{input[i]}) {
				break
			}
		}
	})
}
