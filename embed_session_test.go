package qsf_test

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/qsf-llm/qsf"
)

// TestSessionEmbed checks Embed's shape and determinism, that different
// texts give different vectors and that the session is left empty.
func TestSessionEmbed(t *testing.T) {
	m := loadChatModel(t, "gguf/stories260K-Q4_0.gguf", "chatml", "")
	s, err := m.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	a, err := s.Embed(ctx, "Once upon a time")
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != m.Info().Embedding {
		t.Fatalf("len = %d, want %d", len(a), m.Info().Embedding)
	}
	if s.Pos() != 0 || len(s.Tokens()) != 0 {
		t.Fatalf("session not empty after Embed: pos %d", s.Pos())
	}
	a2, _ := s.Embed(ctx, "Once upon a time")
	b, _ := s.Embed(ctx, "The cat sat")
	if !slices.Equal(a, a2) {
		t.Error("Embed is not deterministic")
	}
	if slices.Equal(a, b) {
		t.Error("different texts give the same embedding")
	}
	for _, v := range a {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatalf("non-finite value %v", v)
		}
	}
	if _, err := s.Embed(ctx, ""); err == nil && m.BOS() < 0 {
		t.Error("Embed of an empty text without BOS succeeded")
	}
}

// TestGenerateLogprobs checks Token.Logprob and TopLogprobs against the
// log-softmax of the logits a fresh session computes with Forward.
func TestGenerateLogprobs(t *testing.T) {
	m := loadChatModel(t, "gguf/stories260K-Q4_0.gguf", "chatml", "")
	s, _ := m.NewSession()
	defer s.Close()
	var toks []qsf.Token
	res, err := s.Generate(context.Background(), "Once upon", qsf.GenerateOptions{MaxTokens: 4, Logprobs: true, TopLogprobs: 3},
		func(tk qsf.Token) error { toks = append(toks, tk); return nil })
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := m.NewSession()
	defer ref.Close()
	ids := res.PromptTokens
	for i, tk := range toks {
		logits, err := ref.Forward(context.Background(), ids)
		if err != nil {
			t.Fatal(err)
		}
		mx := slices.Max(logits)
		var sum float64
		for _, l := range logits {
			sum += math.Exp(float64(l - mx))
		}
		want := float64(logits[tk.ID]-mx) - math.Log(sum)
		if math.Abs(float64(tk.Logprob)-want) > 1e-5 {
			t.Errorf("token %d: logprob %v, want %v", i, tk.Logprob, want)
		}
		if len(tk.TopLogprobs) != 3 || tk.TopLogprobs[0].ID != tk.ID || tk.TopLogprobs[0].Logprob != tk.Logprob {
			t.Errorf("token %d: top %v, want the greedy token %d first", i, tk.TopLogprobs, tk.ID)
		}
		if !(tk.TopLogprobs[0].Logprob >= tk.TopLogprobs[1].Logprob && tk.TopLogprobs[1].Logprob >= tk.TopLogprobs[2].Logprob) {
			t.Errorf("token %d: top not sorted: %v", i, tk.TopLogprobs)
		}
		ids = []int{tk.ID}
	}
}

// TestSessionComplete checks that Complete equals Reset and Generate,
// and reuses the cached prefix on a repeated prompt.
func TestSessionComplete(t *testing.T) {
	m := loadChatModel(t, "gguf/stories260K-Q4_0.gguf", "chatml", "")
	s, _ := m.NewSession()
	defer s.Close()
	ctx := context.Background()
	opts := qsf.GenerateOptions{MaxTokens: 8}
	if _, err := s.Generate(ctx, "Something else entirely", opts, nil); err != nil {
		t.Fatal(err)
	}
	first, err := s.Complete(ctx, "Once upon a time", opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.Complete(ctx, "Once upon a time", opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	fresh, _ := m.NewSession()
	defer fresh.Close()
	want, err := fresh.Generate(ctx, "Once upon a time", opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []qsf.ChatResult{first, again} {
		if !slices.Equal(r.Tokens, want.Tokens) {
			t.Errorf("Complete tokens %v, want %v", r.Tokens, want.Tokens)
		}
	}
	if again.CachedTokens == 0 || again.CachedTokens != len(want.PromptTokens)-1 {
		t.Errorf("second Complete reused %d tokens, want %d", again.CachedTokens, len(want.PromptTokens)-1)
	}
}
