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
	f.Add(`root ::= ("a"+)+ "b" | [^a-c]{2,3} .`, "aaab")
	f.Add(`root ::= [^\x00-\U0010FFFF] "a"`, "a")
	f.Add("root ::= x \"c\"\nx ::= \"a\" x \"b\" | \"\"", "aabbc")
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
			if !errors.As(err, &se) && !errors.Is(err, ErrNoRoot) && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrEmpty) {
				t.Fatalf("error without a position: %v", err)
			}
			return
		}
		if len(input) > 64 || len(g.elems) > 2000 {
			return
		}
		if got, want := g.Match(input), refMatch(g, input); got != want {
			t.Fatalf("Match(%q) = %v, the reference recognizer says %v", input, got, want)
		}
	})
}

// refMatch is a reference recognizer: memoized recursive descent over
// (element position, input offset), returning every offset where the rest
// of an alternative can end. It knows nothing of stacks or lookahead.
func refMatch(g *Grammar, s string) bool {
	type key struct{ pos, i int32 }
	memo := map[key][]int32{}
	var ends func(pos, i int32) []int32
	ends = func(pos, i int32) []int32 {
		k := key{pos, i}
		if r, ok := memo[k]; ok {
			return r
		}
		var out []int32
		add := func(j int32) {
			for _, x := range out {
				if x == j {
					return
				}
			}
			out = append(out, j)
		}
		switch e := g.elems[pos]; e.kind {
		case elemEnd:
			add(i)
		case elemByte:
			if int(i) < len(s) && g.sets[e.arg].has(s[i]) {
				for _, j := range ends(pos+1, i+1) {
					add(j)
				}
			}
		case elemRef:
			for _, a := range g.rules[e.arg].alts {
				for _, j := range ends(a, i) {
					for _, k := range ends(pos+1, j) {
						add(k)
					}
				}
			}
		}
		memo[k] = out
		return out
	}
	for _, a := range g.rules[g.root].alts {
		for _, j := range ends(a, 0) {
			if int(j) == len(s) {
				return true
			}
		}
	}
	return false
}
