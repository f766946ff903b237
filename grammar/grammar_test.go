package grammar

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qsf-llm/qsf/internal/testfiles"
)

func loadExample(t *testing.T, name string) *Grammar {
	t.Helper()
	dir := filepath.Join(testfiles.Dir(t), "reference", "grammars")
	text, err := os.ReadFile(filepath.Join(dir, name+".gbnf"))
	if err != nil {
		t.Skipf("llama.cpp example grammars not found: %v", err)
	}
	g, err := Parse(string(text))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return g
}

// TestExampleGrammars parses every llama.cpp example grammar and checks
// strings each must accept and reject.
func TestExampleGrammars(t *testing.T) {
	cases := []struct {
		name           string
		accept, reject []string
	}{
		{"json", []string{
			`{}`, `{"a":1}`, `{"a": [1, 2.5, -3e5, true, false, null, "x\n"]}`,
			`{"é": "日本語 🎉"}`, "{\n  \"k\": {\"n\": \"\\u00e9\"} }", `{"a":"b"} `,
		}, []string{
			``, `[]`, `{"a"}`, `{"a":01}`, `{"a":"b"`, "{\"a\":\"\x01\"}", `{"a":"\x"}`, `{"a":tru}`, `{"a":3e10}`,
			"{\"a\":\"\xff\"}", "{\"a\":\"\xed\xa0\x80\"}", "{\"a\":\"\xc3\"}",
		}},
		{"json_arr", []string{"[\n]", "[\n{\"a\":1},\n2]", "[\n\"ü\"]"}, []string{"[]", "[\n1,]", "[\n] "}},
		{"list", []string{"- a\n", "- hello world\n- ünïcödé\n"}, []string{"", "- \n", "- a", "* a\n", "- a\u2028b\n"}},
		{"arithmetic", []string{"1=2\n", "x +3 *(y -2)=z\n", "(1)=1\n2=2\n"}, []string{"1=2", "=1\n", "1=\n", "X=1\n"}},
		{"chess", []string{"1. e4 e5\n2. Nf3 Nc6\n", "1. O-O O-O-O\n9. exd5+ Qxd5#\n"}, []string{"1. e4 e5\n", "2. e4 e5\n", "1. e9 e5\n"}},
		{"c", []string{"int main(){}", "int f(int x){return x+1;}", "float g(){y = 1;while(y<3){y = y+1;}}"}, []string{"int main(", "main(){}", "int f(){return;}"}},
		{"japanese", []string{"こんにちは", "カタカナ ひらがな\n漢字", "、"}, []string{"", "hello", "こんにちは ", "\xe3\x81"}},
		{"english", []string{"Hello, world!", "a b\tc"}, []string{"", "héllo", "a  b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := loadExample(t, tc.name)
			for _, s := range tc.accept {
				if !g.Match(s) {
					t.Errorf("rejects %q", s)
				}
			}
			for _, s := range tc.reject {
				if g.Match(s) {
					t.Errorf("accepts %q", s)
				}
			}
		})
	}
}

func TestGrammarFeatures(t *testing.T) {
	cases := []struct {
		gbnf           string
		accept, reject []string
	}{
		{`root ::= "a"{3}`, []string{"aaa"}, []string{"aa", "aaaa"}},
		{`root ::= "ab"{2,}`, []string{"abab", "ababab"}, []string{"ab", "aba"}},
		{`root ::= [0-9]{1,3} "x"?`, []string{"1", "123x", "12x"}, []string{"", "1234", "x"}},
		{`root ::= .+`, []string{"a", "€", "🎉x"}, []string{"", "\xe2\x82", "\xc0\x80"}},
		{`root ::= [^a-c]`, []string{"d", "é", "\x00"}, []string{"a", "b", "c", "dd"}},
		{`root ::= [α-ω]+`, []string{"αβγ", "ω"}, []string{"a", "Α"}},
		{"root ::= \"\\x41\\u00e9\\U0001F600\\t\\\"\"", []string{"Aé😀\t\""}, []string{"A"}},
		{"root ::= a | b # comment\na ::= \"x\" (\n  \"y\" |\n  \"z\" )\nb ::= \"w\"\n", []string{"xy", "xz", "w"}, []string{"x", "wy"}},
		{"root ::= x*\nx ::= \"(\" x* \")\"", []string{"", "()", "(()())()"}, []string{"(", "())"}},
		{`root ::= "a" | "b" [^\x00-\U0010FFFF] | "c"`, []string{"a", "c"}, []string{"b"}},
		{`root ::= [\x00-\x7f\u0080-\U0010FFFF]`, []string{"a", "\U0010FFFF", "\u0800"}, []string{"\xed\xbf\xbf", "\xf4\x90\x80\x80"}},
		{`root ::= ws "a" ws "b"
ws ::= [ ]*`, []string{"ab", "  a  b"}, []string{"a b "}},
	}
	for _, tc := range cases {
		g, err := Parse(tc.gbnf)
		if err != nil {
			t.Errorf("%q: %v", tc.gbnf, err)
			continue
		}
		for _, s := range tc.accept {
			if !g.Match(s) {
				t.Errorf("%q rejects %q", tc.gbnf, s)
			}
		}
		for _, s := range tc.reject {
			if g.Match(s) {
				t.Errorf("%q accepts %q", tc.gbnf, s)
			}
		}
	}
}

func TestSyntaxErrors(t *testing.T) {
	cases := []struct {
		gbnf      string
		line, col int
		msg       string
	}{
		{`root ::= "abc`, 1, 10, "unterminated string"},
		{"root ::= \"a\"\nfoo := \"b\"", 2, 5, "expecting ::="},
		{"root ::= [a-", 1, 10, "unterminated character class"},
		{"root ::= x", 1, 10, `undefined rule "x"`},
		{"root ::= \"a\" )", 1, 14, "expecting newline"},
		{"root ::= ( \"a\"", 1, 15, "expecting ')'"},
		{"root ::= *", 1, 10, "expecting an item"},
		{"root ::= \"a\"{3,2}", 1, 13, "maximum below its minimum"},
		{"root ::= \"\\q\"", 1, 11, "unknown escape"},
		{"root ::= [z-a]", 1, 13, "reversed"},
		{"root ::= \"a\"\nroot ::= \"b\"", 2, 1, "defined twice"},
		{"root ::= x\nx ::= x \"a\"", 2, 1, "left recursion"},
		{"root ::= (\"a\"?)*", 1, 1, "without consuming"},
		{"root ::= \"a\"{99999}", 1, 14, "repetition count"},
	}
	for _, tc := range cases {
		_, err := Parse(tc.gbnf)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("%q: error %v, want a SyntaxError", tc.gbnf, err)
			continue
		}
		if se.Line != tc.line || se.Column != tc.col || !strings.Contains(se.Msg, tc.msg) {
			t.Errorf("%q: %v, want line %d, column %d, %q", tc.gbnf, err, tc.line, tc.col, tc.msg)
		}
	}
	if _, err := Parse(`foo ::= "a"`); !errors.Is(err, ErrNoRoot) {
		t.Errorf("no root: %v, want ErrNoRoot", err)
	}
	if _, err := Parse(`root ::= "a" x
x ::= [^\x00-\U0010FFFF]`); !errors.Is(err, ErrEmpty) {
		t.Errorf("empty language: %v, want ErrEmpty", err)
	}
}

// TestPartialUTF8 feeds multi-byte characters split across Accept calls,
// as tokens split them.
func TestPartialUTF8(t *testing.T) {
	g := MustParse(`root ::= "é" [ぁ-ゟ]+ "!"`)
	m := NewMatcher(g)
	for _, part := range []string{"\xc3", "\xa9\xe3", "\x81", "\x82\xe3\x82\x93", "!"} {
		if !m.AcceptString(part) {
			t.Fatalf("rejects %q", part)
		}
	}
	if !m.Done() {
		t.Fatal("not done after the full string")
	}
	m.Reset()
	if !m.AcceptString("\xc3") || m.AcceptString("\xc3") || !m.AcceptString("\xa9") {
		t.Fatal("a rejected byte changed the state")
	}
}

// TestAmbiguityStaysSmall checks that equal stacks reached in different
// ways are one stack: an ambiguous grammar keeps a constant set of stacks
// instead of one per way of splitting the input.
func TestAmbiguityStaysSmall(t *testing.T) {
	for _, src := range []string{`root ::= ("a"+)+ "b"`, `root ::= (("a"+)+ | "a" "a"*)+ "b"`, `root ::= x+ "b"
x ::= "a" | "a" "a"`} {
		m := NewMatcher(MustParse(src))
		most := 0
		for range 2000 {
			if !m.AcceptString("a") {
				t.Fatalf("%s rejects a", src)
			}
			most = max(most, len(m.tops))
		}
		if most > 16 {
			t.Errorf("%s: up to %d stacks", src, most)
		}
		if !m.AcceptString("b") || !m.Done() {
			t.Errorf("%s: a…ab not accepted", src)
		}
	}
}
