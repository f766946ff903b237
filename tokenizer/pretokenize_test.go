package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"unicode"

	"github.com/qsf-llm/qsf/internal/testfiles"
)

func TestPreTokenizers(t *testing.T) {
	cases := []struct {
		name string
		fn   pretokFn
		text string
		want []string
	}{
		{"gpt2", preGPT2, "Hello world's  end 123!!\n", []string{"Hello", " world", "'s", " ", " end", " 123", "!!", "\n"}},
		{"gpt2/case", preGPT2, "IT'S", []string{"IT", "'", "S"}},
		{"gpt2/space-end", preGPT2, "a  ", []string{"a", "  "}},
		{"llama3", preLlama3, "Hello world's  end 12345!!\n\nok", []string{"Hello", " world", "'s", " ", " end", " ", "123", "45", "!!\n\n", "ok"}},
		{"llama3/case", preLlama3, "IT'S", []string{"IT", "'S"}},
		{"llama3/newlines", preLlama3, "a \n \n  b", []string{"a", " \n \n", " ", " b"}},
		{"qwen2", preQwen2, "x 12345", []string{"x", " ", "1", "2", "3", "4", "5"}},
		{"default", preDefault, "a+b=$5, x", []string{"a", "+", "b", "=$", "5", ",", " x"}},
		{"default/digits", preDefault, "x 12345", []string{"x", " ", "123", "45"}},
		{"falcon", preFalcon, "x 12345`", []string{"x", " ", "123", "45", "`"}},
		{"starcoder", preStarcoder, "ab 12", []string{"ab", " ", "1", "2"}},
		{"deepseek-coder", preDeepseekCoder, "Hi, 你好\n12", []string{"Hi", ",", " ", "你好", "\n", "1", "2"}},
		{"deepseek-llm", preDeepseekLLM, "Hi, 你好  \n12", []string{"Hi", ",", " ", "你好", "  ", "\n", "12"}},
		{"invalid-utf8", preGPT2, "a\xffb", []string{"a", "\uFFFD", "b"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var p pretok
			got := slices.Clone(p.split(c.fn, c.text))
			if !slices.Equal(got, c.want) {
				t.Errorf("split(%q) = %q, want %q", c.text, got, c.want)
			}
		})
	}
}

func TestCompletePrefix(t *testing.T) {
	cases := []struct {
		in   string
		want int
	}{
		{"abc", 3},
		{"a\xe4\xb8", 1},     // first two bytes of 世
		{"a\xe4\xb8\x96", 4}, // complete
		{"\xf0\x9f\x99", 0},  // partial emoji
		{"a\xff", 2},         // never valid: released
		{"a\x80", 2},         // stray continuation: released
		{"\xe4a", 2},         // broken sequence: released
	}
	for _, c := range cases {
		if got := completePrefix([]byte(c.in)); got != c.want {
			t.Errorf("completePrefix(%q) = %d, want %d", c.in, got, c.want)
		}
	}
}

// TestDeepseekLetterClass guards the deepseek-llm letter class against
// Unicode normalization of its source: every range is ordered and starts and
// ends on a letter, and the only ASCII it holds is A-Z and a-z.
func TestDeepseekLetterClass(t *testing.T) {
	for _, r := range deepseekLetters {
		if r.lo > r.hi || !unicode.IsLetter(r.lo) || !unicode.IsLetter(r.hi) {
			t.Errorf("range %U-%U is not an ordered range of letters", r.lo, r.hi)
		}
	}
	for r := rune(0); r < 0x80; r++ {
		want := 'A' <= r && r <= 'Z' || 'a' <= r && r <= 'z'
		if got := inRanges(r, deepseekLetters); got != want {
			t.Errorf("inRanges(%q, deepseekLetters) = %v, want %v", r, got, want)
		}
	}
}

// TestDeepseekLLMSpecialSpelling covers text in which the spelling of a
// special token, parsed as plain text, is followed by more words: llama.cpp
// splits "|>" off as one punctuation run (id 66325 in deepseek-llm's vocab).
func TestDeepseekLLMSpecialSpelling(t *testing.T) {
	path := filepath.Join(testfiles.Dir(t), "models/vocab/ggml-vocab-deepseek-llm.gguf")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("no deepseek-llm vocab: %v", err)
	}
	tok := loadGGUFTokenizer(t, path)
	cases := []struct {
		text string
		want []int
	}{
		{"<|endoftext|> more words", []int{27, 91, 409, 994, 822, 66325, 691, 3073}},
		{"|>", []int{66325}},
		{"a|> b", []int{64, 66325, 270}},
	}
	for _, c := range cases {
		if got := tok.Encode(c.text, EncodeOptions{}); !slices.Equal(got, c.want) {
			t.Errorf("Encode(%q) = %v, want %v", c.text, got, c.want)
		}
	}
	var p pretok
	for text, want := range map[string][]string{
		"<|endoftext|> more": {"<|", "endoftext", "|>", " more"},
		"x~| y{z}":           {"x", "~|", " y", "{", "z", "}"},
		// ":-~" in the punctuation class holds the ASCII letters, so
		// that stage splits the ASCII part off a letter run.
		"Zoë~ß|": {"Zo", "ë", "~", "ß", "|"},
	} {
		if got := p.split(preDeepseekLLM, text); !slices.Equal(got, want) {
			t.Errorf("split(%q) = %q, want %q", text, got, want)
		}
	}
}
