package qsf_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/internal/testfiles"
)

func loadStories(t *testing.T, cfg qsf.Config) *qsf.Model {
	t.Helper()
	path := testfiles.Path(t, "models", "gguf", "stories260K-f32.gguf")
	if cfg.ContextLength == 0 {
		cfg.ContextLength = 128
	}
	m, err := qsf.Load(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func greedy(t *testing.T, m *qsf.Model, prompt string, n int) qsf.Result {
	t.Helper()
	s, err := m.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.Generate(context.Background(), prompt, qsf.GenerateOptions{MaxTokens: n}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestGreedyStory(t *testing.T) {
	m := loadStories(t, qsf.Config{Threads: 1})
	res := greedy(t, m, "Once upon a time", 64)
	want := "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball. She wanted to play with it,"
	if got := "Once upon a time" + res.Text; !strings.HasPrefix(got, want) {
		t.Errorf("greedy text\n got %q\nwant prefix %q", got, want)
	}
	if fmt.Sprint(res.PromptTokens) != "[1 403 407 261 378]" {
		t.Errorf("prompt tokens %v", res.PromptTokens)
	}
	if len(res.Tokens) != 64 || res.Reason != qsf.StopMaxTokens {
		t.Errorf("%d tokens, reason %q", len(res.Tokens), res.Reason)
	}
}

// TestConcurrentSessions runs two sessions on one Model at once (run with
// -race) and checks each gives the tokens it gives alone.
func TestConcurrentSessions(t *testing.T) {
	m := loadStories(t, qsf.Config{Threads: 2})
	prompts := []string{"Once upon a time", "The little dog was"}
	alone := make([]string, len(prompts))
	for i, p := range prompts {
		alone[i] = fmt.Sprint(greedy(t, m, p, 40).Tokens)
	}
	together := make([]string, len(prompts))
	var wg sync.WaitGroup
	for i, p := range prompts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := m.NewSession()
			if err != nil {
				t.Error(err)
				return
			}
			defer s.Close()
			res, err := s.Generate(context.Background(), p, qsf.GenerateOptions{MaxTokens: 40}, nil)
			if err != nil {
				t.Error(err)
			}
			together[i] = fmt.Sprint(res.Tokens)
		}()
	}
	wg.Wait()
	for i := range prompts {
		if alone[i] != together[i] {
			t.Errorf("%q: concurrent tokens %s, alone %s", prompts[i], together[i], alone[i])
		}
	}
}

func TestGenerateCancel(t *testing.T) {
	m := loadStories(t, qsf.Config{Threads: 1})
	s, err := m.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	res, err := s.Generate(ctx, "Once upon a time", qsf.GenerateOptions{MaxTokens: 100}, func(qsf.Token) error {
		n++
		if n == 5 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if len(res.Tokens) != 5 {
		t.Errorf("generated %d tokens after cancelling at the 5th, want 5", len(res.Tokens))
	}
}

func TestGenerateCallbackError(t *testing.T) {
	m := loadStories(t, qsf.Config{Threads: 1})
	s, err := m.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	boom := errors.New("boom")
	n := 0
	res, err := s.Generate(context.Background(), "Once upon a time", qsf.GenerateOptions{MaxTokens: 100}, func(qsf.Token) error {
		n++
		if n == 3 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the callback's error", err)
	}
	if len(res.Tokens) != 3 {
		t.Errorf("generated %d tokens, want 3", len(res.Tokens))
	}
}

func TestGenerateStopString(t *testing.T) {
	m := loadStories(t, qsf.Config{Threads: 1})
	s, err := m.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var streamed strings.Builder
	res, err := s.Generate(context.Background(), "Once upon a time", qsf.GenerateOptions{MaxTokens: 64, Stop: []string{"Lily"}},
		func(tok qsf.Token) error { streamed.WriteString(tok.Text); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != qsf.StopString || res.Text != ", there was a little girl named " || streamed.String() != res.Text {
		t.Errorf("reason %q, text %q, streamed %q", res.Reason, res.Text, streamed.String())
	}
}

// TestSessionContinues checks that a second Generate continues the
// conversation (no second BOS) and Reset starts over.
func TestSessionContinues(t *testing.T) {
	m := loadStories(t, qsf.Config{Threads: 1})
	s, err := m.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	first, err := s.Generate(ctx, "Once upon a time", qsf.GenerateOptions{MaxTokens: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.Generate(ctx, " Lily", qsf.GenerateOptions{MaxTokens: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if second.PromptTokens[0] == m.BOS() {
		t.Errorf("continuation got a BOS: %v", second.PromptTokens)
	}
	// The last generated token is processed by the next call.
	if want := len(first.PromptTokens) + len(first.Tokens) + len(second.PromptTokens) + len(second.Tokens) - 1; s.Pos() != want {
		t.Errorf("Pos = %d, want %d", s.Pos(), want)
	}
	// The continuation equals feeding the whole conversation at once.
	fresh, _ := m.NewSession()
	defer fresh.Close()
	all := append(append(append([]int{}, first.PromptTokens...), first.Tokens...), second.PromptTokens...)
	logits, err := fresh.Forward(ctx, all)
	if err != nil {
		t.Fatal(err)
	}
	var want []int
	for range 4 {
		id := qsf.Sample(logits, qsf.SamplerOptions{})
		want = append(want, id)
		if logits, err = fresh.Forward(ctx, []int{id}); err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(want) != fmt.Sprint(second.Tokens) {
		t.Errorf("continued conversation gave %v, whole conversation %v", second.Tokens, want)
	}

	s.Reset()
	again, err := s.Generate(ctx, "Once upon a time", qsf.GenerateOptions{MaxTokens: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(again.Tokens) != fmt.Sprint(first.Tokens) {
		t.Errorf("after Reset %v, first time %v", again.Tokens, first.Tokens)
	}
}

func TestContextFull(t *testing.T) {
	m := loadStories(t, qsf.Config{Threads: 1, ContextLength: 8})
	s, err := m.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.Generate(context.Background(), "Once upon a time", qsf.GenerateOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != qsf.StopContext || s.Pos() != 8 {
		t.Errorf("reason %q at position %d", res.Reason, s.Pos())
	}
	if _, err := s.Forward(context.Background(), []int{1}); !errors.Is(err, qsf.ErrContextFull) {
		t.Errorf("Forward on a full context: %v", err)
	}
}

func TestSamplingDeterministic(t *testing.T) {
	m := loadStories(t, qsf.Config{Threads: 1})
	opts := qsf.GenerateOptions{MaxTokens: 32, Sampling: qsf.SamplerOptions{Temperature: 0.9, TopK: 40, TopP: 0.95, MinP: 0.05, RepeatPenalty: 1.1, Seed: 7}}
	run := func() string {
		s, _ := m.NewSession()
		defer s.Close()
		res, err := s.Generate(context.Background(), "Once upon a time", opts, nil)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(res.Tokens)
	}
	a, b := run(), run()
	if a != b {
		t.Errorf("same seed, different tokens:\n%s\n%s", a, b)
	}
	opts.Sampling.Seed = 8
	if c := run(); c == a {
		t.Errorf("seeds 7 and 8 gave the same 32 sampled tokens %s", c)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	notGGUF := filepath.Join(dir, "x.gguf")
	os.WriteFile(notGGUF, []byte("this is not a model file at all"), 0o644)
	if _, err := qsf.Load(notGGUF, qsf.Config{}); !errors.Is(err, format.ErrBadMagic) {
		t.Errorf("not a GGUF: %v", err)
	}
	if _, err := qsf.Load(filepath.Join(dir, "missing.gguf"), qsf.Config{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	// A valid GGUF of an architecture QSF does not run.
	var md format.Metadata
	md.Set("general.architecture", format.StringValue("mamba"))
	path := filepath.Join(dir, "mamba.gguf")
	f, _ := os.Create(path)
	if err := format.WriteGGUF(f, &md, nil, nil); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err := qsf.Load(path, qsf.Config{})
	if !errors.Is(err, qsf.ErrUnsupported) || !strings.Contains(err.Error(), "mamba") {
		t.Errorf("unsupported architecture: %v", err)
	}
}
