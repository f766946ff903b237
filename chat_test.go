package qsf_test

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/internal/testfiles"
)

func loadChatModel(t *testing.T, file, tmpl, kv string) *qsf.Model {
	t.Helper()
	m, err := qsf.Load(testfiles.Path(t, "models", file), qsf.Config{Threads: 1, ContextLength: 256, ChatTemplate: tmpl, KVType: kv})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func commonPrefix(a, b []int) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// TestChatReusesCache has a three-turn conversation and checks, after
// each turn, that the session evaluated only the tokens beyond what its
// KV cache shares with the formatted conversation, and that the logits
// then equal those of a fresh session evaluating the whole conversation
// (prompt and answer) from scratch, bit for bit.
func TestChatReusesCache(t *testing.T) {
	for _, tc := range []struct {
		file, tmpl, kv string
		continues      bool // the answers re-tokenize to the generated tokens
	}{
		{"gguf/stories260K-f32.gguf", "llama2-sys", "f32", true},
		{"gguf/stories260K-f32.gguf", "zephyr", "f16", false},
		{"synthetic/synth-qwen2-f32.gguf", "chatml", "f32", false},
	} {
		t.Run(tc.file+"/"+tc.tmpl+"/"+tc.kv, func(t *testing.T) {
			m := loadChatModel(t, tc.file, tc.tmpl, tc.kv)
			ctx := context.Background()
			s, err := m.NewSession()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			msgs := []qsf.Message{{Role: "system", Content: "You tell short stories."}}
			var fed []int // what the session evaluated, as the test sees it
			for turn, user := range []string{"Once upon a time", "Tell me about Lily.", "And the dog?"} {
				msgs = append(msgs, qsf.Message{Role: "user", Content: user})
				ids, err := m.TokenizeChat(msgs, true)
				if err != nil {
					t.Fatal(err)
				}
				want := min(commonPrefix(fed, ids), len(ids)-1)
				res, err := s.Chat(ctx, msgs, qsf.GenerateOptions{MaxTokens: 10}, nil)
				if err != nil {
					t.Fatal(err)
				}
				if tc.continues && res.CachedTokens != len(fed) {
					t.Errorf("turn %d: %d tokens reused, want all %d evaluated before", turn+1, res.CachedTokens, len(fed))
				}
				if res.CachedTokens != want {
					t.Errorf("turn %d: %d tokens reused, want %d", turn+1, res.CachedTokens, want)
				}
				if got := s.Stats().PromptTokens; got != len(ids)-want {
					t.Errorf("turn %d: %d prompt tokens evaluated, want %d of %d", turn+1, got, len(ids)-want, len(ids))
				}
				if !slices.Equal(res.PromptTokens, ids[want:]) {
					t.Errorf("turn %d: evaluated %v, want %v", turn+1, res.PromptTokens, ids[want:])
				}
				t.Logf("turn %d: %d prompt tokens, %d reused, answer %q (%s)", turn+1, len(ids), res.CachedTokens, res.Text, res.Reason)
				fed = append(ids, res.Tokens[:len(res.Tokens)-1]...)
				msgs = append(msgs, qsf.Message{Role: "assistant", Content: res.Text})

				if turn < 2 {
					continue
				}
				// One more token through both: the chat session (its pending
				// answer token, then this one) and a fresh one (everything).
				extra := []int{res.Tokens[len(res.Tokens)-1], 300}
				got, err := s.Forward(ctx, extra[1:])
				if err != nil {
					t.Fatal(err)
				}
				fed = append(fed, extra...)
				fresh, err := m.NewSession()
				if err != nil {
					t.Fatal(err)
				}
				wantLogits, err := fresh.Forward(ctx, fed)
				fresh.Close()
				if err != nil {
					t.Fatal(err)
				}
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(wantLogits[i]) {
						t.Fatalf("turn %d: logit %d = %v, from scratch %v", turn+1, i, got[i], wantLogits[i])
					}
				}
			}
		})
	}
}

// TestTokenizeChatSpecial: "</s>" (a control token of the stories
// vocabulary) in the format's markup is the token; typed by the user it is
// text.
func TestTokenizeChatSpecial(t *testing.T) {
	m := loadChatModel(t, "gguf/stories260K-f32.gguf", "llama2", "")
	msgs := []qsf.Message{{Role: "user", Content: "a </s> b"}, {Role: "assistant", Content: "ok"}, {Role: "user", Content: "c"}}
	ids, err := m.TokenizeChat(msgs, true)
	if err != nil {
		t.Fatal(err)
	}
	eos := 2
	n := 0
	for _, id := range ids {
		if id == eos {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d EOS tokens in %v, want 1 (the template's, after the answer)", n, ids)
	}
	text, _ := m.ApplyTemplate(msgs, true)
	parsed := m.Tokenize(text, qsf.TokenizeOptions{ParseSpecial: true})
	if slices.Equal(ids, parsed) {
		t.Errorf("the user's </s> was parsed as a special token")
	}
	plain := []qsf.Message{{Role: "user", Content: "a b"}, {Role: "assistant", Content: "ok"}, {Role: "user", Content: "c"}}
	ids, _ = m.TokenizeChat(plain, true)
	text, _ = m.ApplyTemplate(plain, true)
	if want := m.Tokenize(text, qsf.TokenizeOptions{ParseSpecial: true}); !slices.Equal(ids, want) {
		t.Errorf("TokenizeChat %v, tokenizing the formatted text with special tokens %v", ids, want)
	}
}

// TestChatPenaltiesSeeCachedTokens: with a repetition penalty, an answer
// is the same whether the prompt came from the cache or was evaluated in
// full (the penalties count the whole prompt either way).
func TestChatPenaltiesSeeCachedTokens(t *testing.T) {
	m := loadChatModel(t, "gguf/stories260K-f32.gguf", "llama2-sys", "")
	opts := qsf.GenerateOptions{MaxTokens: 16, Sampling: qsf.SamplerOptions{RepeatPenalty: 1.5, RepeatLastN: 64}}
	ctx := context.Background()
	a, _ := m.NewSession()
	defer a.Close()
	msgs := []qsf.Message{{Role: "user", Content: "Once upon a time"}}
	r1, err := a.Chat(ctx, msgs, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	msgs = append(msgs, qsf.Message{Role: "assistant", Content: r1.Text}, qsf.Message{Role: "user", Content: "And then?"})
	cached, err := a.Chat(ctx, msgs, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := m.NewSession()
	defer b.Close()
	full, err := b.Chat(ctx, msgs, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cached.CachedTokens == 0 || full.CachedTokens != 0 {
		t.Fatalf("cached %d, full %d tokens reused", cached.CachedTokens, full.CachedTokens)
	}
	if !slices.Equal(cached.Tokens, full.Tokens) {
		t.Errorf("answer with the cache %v, evaluated in full %v", cached.Tokens, full.Tokens)
	}
}

// TestChatWithEviction: a conversation longer than a sliding-window
// context goes on; a diverging one starts the cache over.
func TestChatWithEviction(t *testing.T) {
	m, err := qsf.Load(testfiles.Path(t, "models", "gguf", "stories260K-f32.gguf"),
		qsf.Config{Threads: 1, ContextLength: 64, KVEviction: "window", ChatTemplate: "llama2"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s, _ := m.NewSession()
	defer s.Close()
	ctx := context.Background()
	var msgs []qsf.Message
	for _, user := range []string{"Once upon a time", "Tell me more", "And then?"} {
		msgs = append(msgs, qsf.Message{Role: "user", Content: user})
		res, err := s.Chat(ctx, msgs, qsf.GenerateOptions{MaxTokens: 30}, nil)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, qsf.Message{Role: "assistant", Content: res.Text})
	}
	if s.Pos() <= 64 {
		t.Fatalf("the conversation fits the context (%d positions): the test needs more", s.Pos())
	}
	// Change the first message: the evicted cache cannot be truncated, so
	// the session starts over and evaluates everything.
	msgs[0].Content = "Once upon a day"
	res, err := s.Chat(ctx, msgs, qsf.GenerateOptions{MaxTokens: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.CachedTokens != 0 {
		t.Errorf("%d tokens reused from an evicted cache", res.CachedTokens)
	}
}

// TestCompleteReuseQuantizedKV checks that a prompt evaluated again on a
// session with a quantized KV cache, reusing the cached prefix (which ends
// inside a key group already quantized: in the first group, and past a
// whole group), generates the tokens of a fresh session.
func TestCompleteReuseQuantizedKV(t *testing.T) {
	for _, kv := range []string{"q8", "q4"} {
		m := loadChatModel(t, "synthetic/synth-llama-Q8_0.gguf", "", kv)
		opts := qsf.GenerateOptions{MaxTokens: 40}
		short := "Client 0 says hello to the server"
		for _, prompt := range []string{short, strings.Repeat(short+". ", 3)} {
			s, err := m.NewSession()
			if err != nil {
				t.Fatal(err)
			}
			fresh, err := m.NewSession()
			if err != nil {
				t.Fatal(err)
			}
			want, err := fresh.Complete(context.Background(), prompt, opts, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got qsf.ChatResult
			for range 2 {
				if got, err = s.Complete(context.Background(), prompt, opts, nil); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("kv %s: %d prompt tokens, %d reused", kv, got.CachedTokens+len(got.PromptTokens), got.CachedTokens)
			if !slices.Equal(got.Tokens, want.Tokens) {
				t.Errorf("kv %s, %d prompt tokens, %d reused: tokens %v, a fresh session's %v", kv, got.CachedTokens+len(got.PromptTokens), got.CachedTokens, got.Tokens, want.Tokens)
			}
			s.Close()
			fresh.Close()
		}
	}
}
