package qsf_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/internal/testfiles"
	"github.com/qsf-llm/qsf/kernels"
	"github.com/qsf-llm/qsf/plan"
)

// streamingConfig returns cfg with the smallest RAM budget the planner
// accepts for the file at path, which makes the model stream its layers.
func streamingConfig(t *testing.T, path string, cfg qsf.Config) qsf.Config {
	t.Helper()
	cfg.RAMBudget = 1
	_, err := qsf.PlanFile(path, cfg)
	var be *plan.BudgetError
	if !errors.As(err, &be) {
		t.Fatalf("plan with a 1-byte budget: %v, want a BudgetError", err)
	}
	cfg.RAMBudget = be.Min
	return cfg
}

// TestCloseWhileGenerating closes the model while four sessions generate,
// resident and streaming: every call must return (a result or ErrClosed),
// and every later call must fail with ErrClosed, never fault.
func TestCloseWhileGenerating(t *testing.T) {
	path := testfiles.Path(t, "models", "gguf", "stories260K-Q4_0.gguf")
	for _, streaming := range []bool{false, true} {
		name := "resident"
		cfg := qsf.Config{ContextLength: 128, Threads: 2}
		if streaming {
			name = "streaming"
			cfg = streamingConfig(t, path, cfg)
		}
		t.Run(name, func(t *testing.T) {
			m, err := qsf.Load(path, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if m.Streaming() != streaming {
				t.Fatalf("Streaming() = %v, want %v", m.Streaming(), streaming)
			}
			var started, done sync.WaitGroup
			errs := make([]error, 4)
			for i := range errs {
				s, err := m.NewSession()
				if err != nil {
					t.Fatal(err)
				}
				started.Add(1)
				done.Add(1)
				go func() {
					defer done.Done()
					defer s.Close()
					first := true
					// Generate until the model is closed: long prompts
					// and outputs, over and over.
					for {
						s.Reset()
						_, err := s.Generate(context.Background(), "Once upon a time, there was a little girl", qsf.GenerateOptions{
							MaxTokens: 100, Sampling: qsf.SamplerOptions{Temperature: 1, Seed: int64(i + 1)},
						}, func(qsf.Token) error {
							if first {
								first = false
								started.Done()
							}
							return nil
						})
						if err != nil {
							errs[i] = err
							if first {
								started.Done()
							}
							return
						}
					}
				}()
			}
			started.Wait()
			time.Sleep(20 * time.Millisecond)
			if err := m.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			done.Wait()
			for i, err := range errs {
				if !errors.Is(err, qsf.ErrClosed) {
					t.Errorf("session %d: Generate after Close = %v, want ErrClosed", i, err)
				}
			}
			if _, err := m.NewSession(); !errors.Is(err, qsf.ErrClosed) {
				t.Errorf("NewSession after Close = %v, want ErrClosed", err)
			}
			if err := m.Close(); err != nil {
				t.Errorf("second Close = %v", err)
			}
		})
	}
}

// TestSessionAfterModelClose uses a session whose model is closed: every
// call fails with ErrClosed.
func TestSessionAfterModelClose(t *testing.T) {
	m := loadStories(t, qsf.Config{ContextLength: 64, Threads: 1})
	s, err := m.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Forward(context.Background(), []int{1, 403}); err != nil {
		t.Fatal(err)
	}
	m.Close()
	if _, err := s.Forward(context.Background(), []int{407}); !errors.Is(err, qsf.ErrClosed) {
		t.Errorf("Forward after model Close = %v, want ErrClosed", err)
	}
	if _, err := s.Generate(context.Background(), "x", qsf.GenerateOptions{MaxTokens: 2}, nil); !errors.Is(err, qsf.ErrClosed) {
		t.Errorf("Generate after model Close = %v, want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Session.Close after model Close = %v", err)
	}
}

// TestKernelPerModel loads one model per tier in one process: each reports
// its own tier and runs its own kernels, whatever the process default, and
// they give the same logits.
func TestKernelPerModel(t *testing.T) {
	tiers := kernels.Tiers()
	if len(tiers) < 2 {
		t.Skipf("only %v on this CPU", tiers)
	}
	before := kernels.DefaultTier()
	path := testfiles.Path(t, "models", "gguf", "stories260K-Q8_0.gguf")
	var logits [][]float32
	for _, name := range tiers {
		m, err := qsf.Load(path, qsf.Config{Kernel: name, ContextLength: 64, Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		if got := m.Info().Kernel; got != name {
			t.Errorf("Load(Kernel: %q).Info().Kernel = %q", name, got)
		}
		s, err := m.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		l, err := s.Forward(context.Background(), []int{1, 403, 407, 261, 378})
		if err != nil {
			t.Fatal(err)
		}
		logits = append(logits, l)
	}
	if kernels.DefaultTier() != before {
		t.Errorf("Load changed the process default tier from %s to %s", before.Name(), kernels.DefaultTier().Name())
	}
	for i := 1; i < len(logits); i++ {
		for j := range logits[0] {
			if logits[i][j] != logits[0][j] {
				t.Fatalf("logit %d: %s gives %v, %s gives %v", j, tiers[i], logits[i][j], tiers[0], logits[0][j])
			}
		}
	}
	if _, err := qsf.Load(path, qsf.Config{Kernel: "sse9"}); !errors.Is(err, kernels.ErrTier) {
		t.Errorf("Load(Kernel: sse9) = %v, want ErrTier", err)
	}
}

// TestLoadLeavesMemoryLimit: a budgeted (streaming) load suggests a Go
// memory limit but does not set it.
func TestLoadLeavesMemoryLimit(t *testing.T) {
	path := testfiles.Path(t, "models", "gguf", "stories260K-f32.gguf")
	cfg := streamingConfig(t, path, qsf.Config{ContextLength: 64, Threads: 1})
	before := debug.SetMemoryLimit(-1)
	m, err := qsf.Load(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if !m.Streaming() {
		t.Fatal("the smallest budget did not make the model stream")
	}
	if after := debug.SetMemoryLimit(-1); after != before {
		t.Errorf("Load changed the Go memory limit from %d to %d", before, after)
	}
	if m.MemoryLimit() <= 0 {
		t.Errorf("MemoryLimit() = %d for a streaming model, want a limit", m.MemoryLimit())
	}
}

// TestDroppedSessionsLeakNothing creates 100 streaming sessions and drops
// them without Close: once collected, their reader goroutines are gone.
func TestDroppedSessionsLeakNothing(t *testing.T) {
	path := testfiles.Path(t, "models", "gguf", "stories260K-f32.gguf")
	m, err := qsf.Load(path, streamingConfig(t, path, qsf.Config{ContextLength: 32, Threads: 2}))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	settle := func() int {
		for range 5 {
			runtime.GC()
			time.Sleep(10 * time.Millisecond)
		}
		return runtime.NumGoroutine()
	}
	base := settle()
	for i := range 100 {
		s, err := m.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 { // some of them used, so their reader ran
			if _, err := s.Forward(context.Background(), []int{1, 403}); err != nil {
				t.Fatal(err)
			}
		}
	}
	n := settle()
	for deadline := time.Now().Add(5 * time.Second); n > base && time.Now().Before(deadline); {
		n = settle()
	}
	if n > base {
		t.Errorf("%d goroutines after dropping 100 sessions, %d before", n, base)
	}
}

// TestImportPrintsNothing runs this test binary with nothing to test and a
// bad QSF_KERNEL: importing the packages must print nothing to stderr.
func TestImportPrintsNothing(t *testing.T) {
	if os.Getenv("QSF_IMPORT_CHILD") != "" {
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestImportPrintsNothing$")
	cmd.Env = append(os.Environ(), "QSF_KERNEL=no-such-tier", "QSF_IMPORT_CHILD=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("child: %v (stderr %q)", err, stderr.String())
	}
	if stderr.Len() > 0 {
		t.Errorf("importing the packages printed %q", stderr.String())
	}
}
