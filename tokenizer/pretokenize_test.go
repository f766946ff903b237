package tokenizer

import (
	"slices"
	"testing"
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
