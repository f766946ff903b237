package grammar

import (
	"math"
	"math/rand/v2"
	"testing"
)

// testPieces is a small vocabulary: every byte, JSON fragments, and
// multi-byte characters whole and split.
func testPieces() []string {
	var p []string
	for b := range 256 {
		p = append(p, string([]byte{byte(b)}))
	}
	p = append(p, "", // a control token
		`{"`, `":`, `": "`, `",`, `"}`, `}`, `{}`, `[]`, `, `, ` "`, `true`, `false`, `null`, `nul`, `12`, `3.5`, `-1`, `e+`,
		`ab`, `abc`, `hello`, ` world`, `\n`, `\"`, `\u00`, `e9`, "é", "日本", "\xe6\x97", "\xa5\xe6", "🎉", "\xf0\x9f", "\x8e\x89",
		"\n  ", "  ", `"a"`, `"b":`, `1,`, `[1`, `]}`, `"}}`, "</s>")
	return p
}

// TestFilterMatchesBruteForce follows random paths through the JSON
// grammar and checks each step's allowed set against trying every token.
func TestFilterMatchesBruteForce(t *testing.T) {
	g := loadExample(t, "json")
	pieces := testPieces()
	eos := len(pieces) - 1
	v := NewVocab(pieces, []int{eos})
	for seed := range 20 {
		rng := rand.New(rand.NewPCG(uint64(seed), 1))
		f := NewFilter(g, v)
		var prefix []byte
		for step := 0; step < 60 && !f.Done(); step++ {
			allowed := f.Allowed()
			var choices []int
			for id, piece := range pieces {
				m := NewMatcher(g)
				m.Accept(prefix)
				want := piece != "" && id != eos && m.AcceptString(piece)
				if id == eos {
					want = m.Accepting()
				}
				got := allowed[id>>6]>>(id&63)&1 != 0
				if got != want {
					t.Fatalf("seed %d, after %q: token %q allowed=%v, want %v", seed, prefix, piece, got, want)
				}
				if got {
					choices = append(choices, id)
				}
			}
			if len(choices) != f.Count() {
				t.Fatalf("Count %d, want %d", f.Count(), len(choices))
			}
			if len(choices) == 0 {
				t.Fatalf("seed %d: nothing allowed after %q", seed, prefix)
			}
			id := choices[rng.IntN(len(choices))]
			if err := f.Accept(id); err != nil {
				t.Fatal(err)
			}
			if id != eos {
				prefix = append(prefix, pieces[id]...)
			}
		}
	}
}

func TestFilterRejectsAndEOG(t *testing.T) {
	g := MustParse(`root ::= "ab" "c"?`)
	pieces := []string{"a", "b", "ab", "c", "", "x"}
	v := NewVocab(pieces, []int{4})
	f := NewFilter(g, v)
	if err := f.Accept(4); err == nil {
		t.Fatal("EOG accepted before the grammar is complete")
	}
	if err := f.Accept(5); err == nil {
		t.Fatal("x accepted")
	}
	if err := f.Accept(2); err != nil {
		t.Fatal(err)
	}
	if !f.Accepting() || f.Done() {
		t.Fatalf("after ab: accepting %v done %v", f.Accepting(), f.Done())
	}
	logits := []float32{1, 1, 1, 1, 1, 1, 1} // one id beyond the vocabulary
	if n := f.Mask(logits); n != 2 {
		t.Fatalf("Mask left %d tokens, want 2 (c and EOG)", n)
	}
	inf := float32(math.Inf(-1))
	want := []float32{inf, inf, inf, 1, 1, inf, inf}
	for i := range want {
		if logits[i] != want[i] {
			t.Fatalf("logits %v, want %v", logits, want)
		}
	}
	if err := f.Accept(3); err != nil || !f.Done() {
		t.Fatalf("after abc: %v, done %v", err, f.Done())
	}
	f.Reset()
	if err := f.Accept(2); err != nil {
		t.Fatal(err)
	}
	f.Count() // cache the state after "ab"
	if err := f.Accept(4); err != nil || !f.Done() || f.Count() != 0 {
		t.Fatalf("after ab and EOG: %v, done %v, %d allowed", err, f.Done(), f.Count())
	}
}

// TestFilterDeadEnds checks that a token is not allowed when its bytes
// lead only into an alternative that can never complete.
func TestFilterDeadEnds(t *testing.T) {
	g := MustParse(`root ::= "a" "b" | "c" [^\x00-\U0010FFFF]`)
	f := NewFilter(g, NewVocab([]string{"a", "c", "ab"}, nil))
	if got := f.Allowed()[0]; got != 0b101 {
		t.Errorf("allowed %b, want a and ab only", got)
	}
}

// TestFilterNoAllocs checks that masking and accepting allocate nothing
// once the states have been seen.
func TestFilterNoAllocs(t *testing.T) {
	g := MustParse(`root ::= ("{\"a\": \"" [^"]* "\"}" [ ]?)+`)
	pieces := testPieces()
	v := NewVocab(pieces, nil)
	f := NewFilter(g, v)
	logits := make([]float32, len(pieces))
	seq := []string{`{"`, "a", `": "`, "hello", "日本", ` world`, `"}`, " "}
	ids := make([]int, len(seq))
	for i, s := range seq {
		for id, p := range pieces {
			if p == s {
				ids[i] = id
			}
		}
	}
	run := func() {
		for _, id := range ids {
			f.Mask(logits)
			if err := f.Accept(id); err != nil {
				t.Fatal(err)
			}
		}
	}
	run()
	if a := testing.AllocsPerRun(20, run); a != 0 {
		t.Fatalf("%v allocations per run, want 0", a)
	}
}
