//go:build unix

package qsf

import (
	"context"
	"errors"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/qsf-llm/qsf/model"
	"github.com/qsf-llm/qsf/plan"
)

// BenchmarkStep measures one decoding step of 4 sequences on the model
// named by QSF_BATCH_MODEL at 2 threads, three ways: each sequence's
// Forward in turn (solo), one model.ForwardMulti over the 4 (multi), and
// a 4-token prompt chunk of one sequence (prefill, the bound for multi:
// the same mat-muls of 4 rows); with QSF_BATCH_STREAM set, under the
// smallest RAM budget (layer streaming; no prefill); QSF_BATCH_THREADS
// sets another number of threads. ns/op is per step of 4 tokens; cpu-ms/tok is the process's CPU time per
// token.
func BenchmarkStep(b *testing.B) {
	path := os.Getenv("QSF_BATCH_MODEL")
	if path == "" {
		b.Skip("set QSF_BATCH_MODEL to a model file")
	}
	cfg := Config{Threads: 2, ContextLength: 1024}
	if n, err := strconv.Atoi(os.Getenv("QSF_BATCH_THREADS")); err == nil && n > 0 {
		cfg.Threads = n // 1: CPU time is the work alone, without the pool's polling
	}
	stream := os.Getenv("QSF_BATCH_STREAM") != ""
	if stream { // the smallest budget: layer streaming
		cfg.RAMBudget = 1
		var be *plan.BudgetError
		if _, err := PlanFile(path, cfg); !errors.As(err, &be) {
			b.Fatalf("plan with a 1-byte budget: %v, want a BudgetError", err)
		}
		cfg.RAMBudget = be.Min
	}
	m, err := Load(path, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	const n = 4
	sessions := make([]*Session, n)
	for i := range sessions {
		if sessions[i], err = m.NewSession(); err != nil {
			b.Fatal(err)
		}
		defer sessions[i].Close()
		if _, err := sessions[i].Forward(context.Background(), []int{1, 100 + i, 200 + i}); err != nil {
			b.Fatal(err)
		}
	}
	// cpu is the process's CPU time: other processes on the machine
	// disturb it less than wall time.
	cpu := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	states := make([]*model.State, n)
	for i, s := range sessions {
		states[i] = s.state
	}
	toks := []int{300, 301, 302, 303}
	// The sequences decode at positions 8 to 64 (the prompt is
	// re-evaluated outside the measurement), as in a short chat.
	prompt := []int{1, 100, 200, 300, 400, 500, 600, 700}
	var excluded time.Duration
	rewind := func(b *testing.B) {
		for _, st := range states {
			if st.KV.Len() >= 64 {
				b.StopTimer()
				c := cpu()
				st.KV.Reset()
				if err := st.ForwardBatch(prompt, 0, false); err != nil {
					b.Fatal(err)
				}
				excluded += cpu() - c
				b.StartTimer()
			}
		}
	}
	var c0 time.Duration
	start := func(b *testing.B) { b.ResetTimer(); c0, excluded = cpu(), 0 }
	stop := func(b *testing.B) {
		b.ReportMetric(float64(cpu()-c0-excluded)/float64(b.N*n)/1e6, "cpu-ms/tok")
	}
	b.Run("solo", func(b *testing.B) {
		start(b)
		defer stop(b)
		for range b.N {
			rewind(b)
			for i, st := range states {
				if err := st.Forward(toks[i], st.KV.Len(), true); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("multi", func(b *testing.B) {
		start(b)
		defer stop(b)
		for range b.N {
			rewind(b)
			if err := model.ForwardMulti(states, toks, true); err != nil {
				b.Fatal(err)
			}
		}
	})
	if stream {
		return // a prompt chunk streams token by token
	}
	b.Run("prefill", func(b *testing.B) {
		st := states[0]
		start(b)
		defer stop(b)
		for range b.N {
			rewind(b)
			if err := st.ForwardBatch(toks, st.KV.Len(), true); err != nil {
				b.Fatal(err)
			}
		}
	})
}
