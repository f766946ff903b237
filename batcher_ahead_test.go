package qsf_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/internal/testfiles"
)

// TestBatcherCallbackEndsEarly stops a batched generation from its
// callback (an error, or a cancelled context) while the step of the token
// it was handed may already be running (or done: "cancel after the
// step"), then continues it, in the session
// and in a copy restored from Save: the continuation, the session's
// tokens and position must be those of a generation that never stopped.
// Whether another session is in the steps (b, which holds the Batcher's
// steps back while the callback runs) must not matter either.
func TestBatcherCallbackEndsEarly(t *testing.T) {
	m, err := qsf.Load(testfiles.Path(t, "models", "gguf/stories260K-Q4_0.gguf"), qsf.Config{Threads: 1, ContextLength: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	const prompt, n = "Once upon a time", 24
	ref, err := m.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	want, err := ref.Generate(context.Background(), prompt, qsf.GenerateOptions{MaxTokens: n}, nil)
	if err != nil {
		t.Fatal(err)
	}
	errStop := errors.New("stop")
	for _, other := range []bool{false, true} {
		for _, mode := range []string{"error", "cancel", "cancel after the step"} {
			cancel := mode != "error"
			for _, at := range []int{0, 5, n - 2} {
				b := m.NewBatcher()
				s, err := m.NewSession()
				if err != nil {
					t.Fatal(err)
				}
				s.SetBatcher(b)
				// The other session generates one token, and its
				// callback returns only after s's at-th callback: it
				// stays in the Batcher's loop meanwhile, so s's step
				// waits for it (or for batchWait).
				release, otherDone := make(chan struct{}), make(chan struct{})
				if other {
					o, err := m.NewSession()
					if err != nil {
						t.Fatal(err)
					}
					o.SetBatcher(b)
					go func() {
						defer close(otherDone)
						defer o.Close()
						o.Generate(context.Background(), "The", qsf.GenerateOptions{MaxTokens: 1}, func(qsf.Token) error {
							<-release
							return nil
						})
					}()
				} else {
					close(otherDone)
				}
				ctx, stop := context.WithCancel(context.Background())
				calls := 0
				res, err := s.Generate(ctx, prompt, qsf.GenerateOptions{MaxTokens: n}, func(tok qsf.Token) error {
					if tok.ID < 0 {
						return nil
					}
					calls++
					if calls-1 < at {
						return nil
					}
					if other {
						close(release)
					}
					if mode == "cancel after the step" {
						// The step of tok runs meanwhile: wait for it.
						for deadline := time.Now().Add(time.Minute); b.Stats().Tokens <= int64(at) && time.Now().Before(deadline); {
							time.Sleep(10 * time.Microsecond)
						}
					}
					if cancel {
						stop()
						return nil
					}
					return errStop
				})
				<-otherDone
				stop()
				name := mode
				if other {
					name += " with another session"
				}
				wantErr := errStop
				if cancel {
					wantErr = context.Canceled
				}
				if !errors.Is(err, wantErr) || !slices.Equal(res.Tokens, want.Tokens[:at+1]) {
					t.Fatalf("%s at token %d: %v, %v; want %v, %v", name, at, res.Tokens, err, want.Tokens[:at+1], wantErr)
				}
				// The step of the token handed to the callback ran
				// while the callback did (and was undone).
				if st := b.Stats(); mode != "cancel" && st.Tokens != int64(at+1) {
					t.Errorf("%s at token %d: the Batcher evaluated %d tokens, want %d", name, at, st.Tokens, at+1)
				}
				var saved bytes.Buffer
				if err := s.Save(&saved); err != nil {
					t.Fatal(err)
				}
				restored, err := m.LoadSession(&saved)
				if err != nil {
					t.Fatal(err)
				}
				for i, c := range []*qsf.Session{s, restored} {
					more, err := c.Generate(context.Background(), "", qsf.GenerateOptions{MaxTokens: n - at - 1}, nil)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(more.Tokens, want.Tokens[at+1:]) || !slices.Equal(c.Tokens(), ref.Tokens()) || c.Pos() != ref.Pos() {
						t.Errorf("%s at token %d, continued (restored: %v): %v, tokens %v at %d; want %v, %v at %d",
							name, at, i == 1, more.Tokens, c.Tokens(), c.Pos(), want.Tokens[at+1:], ref.Tokens(), ref.Pos())
					}
				}
				restored.Close()
				s.Close()
				b.Close()
			}
		}
	}
}
