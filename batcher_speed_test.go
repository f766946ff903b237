//go:build unix

package qsf_test

import (
	"context"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/qsf-llm/qsf"
)

// TestBatcherSpeed measures aggregate decode speed of 1 session and of 4
// sessions decoding together through a Batcher, on the model named by
// QSF_BATCH_MODEL (e.g. qsf synth --shape 12L-768 --type q4_0), with 2
// threads; with QSF_BATCH_STREAM set, under the smallest RAM budget
// (layer streaming). After a warm-up (the sessions' buffers, the CPU's
// frequency), it takes the medians of three interleaved rounds. It is a
// measurement, skipped unless QSF_BATCH_MODEL is set.
func TestBatcherSpeed(t *testing.T) {
	path := os.Getenv("QSF_BATCH_MODEL")
	if path == "" {
		t.Skip("set QSF_BATCH_MODEL to a model file to measure batched decoding")
	}
	cfg := qsf.Config{Threads: 2, ContextLength: 256}
	if os.Getenv("QSF_BATCH_STREAM") != "" {
		cfg = streamingConfig(t, path, cfg) // the smallest budget: layer streaming
	}
	m, err := qsf.Load(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	const tokens = 48
	// CPU time of the process: a figure other processes on the machine
	// disturb less than wall time.
	cpu := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	var cpuPerToken []time.Duration
	run := func(n int, batch bool) float64 {
		var b *qsf.Batcher
		if batch {
			b = m.NewBatcher()
			defer b.Close()
		}
		sessions := make([]*qsf.Session, n)
		for i := range sessions {
			sessions[i], _ = m.NewSession()
			defer sessions[i].Close()
			sessions[i].SetBatcher(b)
			// Evaluate the prompt first: only decoding is measured.
			if _, err := sessions[i].Forward(context.Background(), []int{1, 100 + i, 200 + i}); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		var decode time.Duration
		var mu sync.Mutex
		io0 := m.IOStats() // the sessions share the model's reader
		c0 := cpu()
		for i, s := range sessions {
			wg.Go(func() {
				res, err := s.Generate(context.Background(), " x", qsf.GenerateOptions{MaxTokens: tokens}, nil)
				if err != nil || len(res.Tokens) != tokens {
					t.Errorf("session %d: %v, %d tokens", i, err, len(res.Tokens))
				}
				mu.Lock()
				decode = max(decode, s.Stats().DecodeTime)
				mu.Unlock()
			})
		}
		wg.Wait()
		cpuPerToken = append(cpuPerToken, (cpu()-c0)/time.Duration(n*tokens))
		if m.Streaming() {
			st := m.IOStats()
			io, wait, read := st.IOTime-io0.IOTime, st.Wait-io0.Wait, st.BytesRead-io0.BytesRead
			t.Logf("%d sessions: I/O %v, the passes waited %v for it, %.1f GiB read", n, io, wait, float64(read)/(1<<30))
		}
		if b != nil {
			st := b.Stats()
			t.Logf("batcher: %d decoding tokens in %d steps (%.2f a step), %d prompt tokens", st.Tokens, st.Steps, float64(st.Tokens)/float64(st.Steps), st.PromptTokens)
		}
		return float64(n*tokens) / decode.Seconds()
	}
	run(4, true) // warm-up
	cpuPerToken = cpuPerToken[:0]
	var ones, fours, alones []float64
	for range 3 {
		ones = append(ones, run(1, false))
		fours = append(fours, run(4, true))
		alones = append(alones, run(4, false))
	}
	one, four, fourAlone := medianOf(ones), medianOf(fours), medianOf(alones)
	t.Logf("aggregate decode (medians of 3 interleaved rounds): 1 session %.1f tok/s; 4 batched %.1f tok/s (%.2fx); 4 unbatched %.1f tok/s (%.2fx); rounds %.1f, %.1f, %.1f",
		one, four, four/one, fourAlone, fourAlone/one, ones, fours, alones)
	t.Logf("streaming %v", m.Streaming())
	var cpus [3][]float64 // per token, of the rounds' 1 session, 4 batched, 4 unbatched
	for i, c := range cpuPerToken {
		cpus[i%3] = append(cpus[i%3], float64(c))
	}
	t.Logf("CPU time per token (medians): 1 session %v; 4 batched %v; 4 unbatched %v",
		time.Duration(medianOf(cpus[0])), time.Duration(medianOf(cpus[1])), time.Duration(medianOf(cpus[2])))
}

// medianOf returns the median of v (which it sorts).
func medianOf(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
}
