package qsf

import (
	"context"
	"slices"
	"testing"

	"github.com/qsf-llm/qsf/chat"
	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/internal/testfiles"
	"github.com/qsf-llm/qsf/tokenizer"
)

// TestEndOfTurn: a format's end-of-turn text becomes a token when the
// vocabulary has it as a control token, a stop string otherwise.
func TestEndOfTurn(t *testing.T) {
	f, err := format.Open(testfiles.Path(t, "models", "vocab", "ggml-vocab-phi-3.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tok, err := tokenizer.FromGGUF(&f.Metadata)
	if err != nil {
		t.Fatal(err)
	}
	m := &Model{tok: tok}
	end, _ := tok.Lookup("<|end|>")
	if ids, stops := m.endOfTurn(chat.Phi3); !slices.Equal(ids, []int{end}) || len(stops) != 0 {
		t.Errorf("phi3 on the phi-3 vocabulary: ids %v stops %q, want [%d] and none", ids, stops, end)
	}
	if ids, stops := m.endOfTurn(chat.ChatML); len(ids) != 0 || !slices.Equal(stops, []string{"<|im_end|>"}) {
		t.Errorf("chatml on the phi-3 vocabulary: ids %v stops %q, want the stop string", ids, stops)
	}
}

// TestGenerateStopsAtEndOfTurn: a token of GenerateOptions.endOfTurn ends
// generation as EOS does.
func TestGenerateStopsAtEndOfTurn(t *testing.T) {
	m, err := Load(testfiles.Path(t, "models", "gguf", "stories260K-f32.gguf"), Config{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s, err := m.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	free, err := s.Generate(ctx, "Once upon a time", GenerateOptions{MaxTokens: 6}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Reset()
	prompt := m.Tokenize("Once upon a time", TokenizeOptions{})
	res, err := s.generate(ctx, prompt, GenerateOptions{MaxTokens: 6, endOfTurn: []int{free.Tokens[3]}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Tokens, free.Tokens[:4]) || res.Reason != StopEOS {
		t.Errorf("with end of turn %d: %v (%s), without %v", free.Tokens[3], res.Tokens, res.Reason, free.Tokens)
	}
}
