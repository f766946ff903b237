package server_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/plan"
	"github.com/qsf-llm/qsf/server"
)

// TestServeSpeed measures a server of 4 sessions (2 threads) on the model
// named by QSF_SERVE_MODEL: the aggregate decode rate of 1 streaming
// client, then of 4 at once (chunks over the time from the first chunk to
// the last; 96 tokens a client; after a warm-up, the medians of three
// interleaved rounds), and the time to the first chunk. With QSF_SERVE_STREAM set it
// runs under the smallest RAM budget (layer streaming), and with
// QSF_SERVE_DROP_CACHE set too it drops the file's pages after reading
// them (reads from the disk). It is a measurement, skipped unless
// QSF_SERVE_MODEL is set.
func TestServeSpeed(t *testing.T) {
	path := os.Getenv("QSF_SERVE_MODEL")
	if path == "" {
		t.Skip("set QSF_SERVE_MODEL to a model file to measure the server")
	}
	cfg := qsf.Config{Threads: 2, ContextLength: 256, ChatTemplate: "chatml"}
	if os.Getenv("QSF_SERVE_STREAM") != "" {
		cfg.RAMBudget = 1
		var be *plan.BudgetError
		if _, err := qsf.PlanFile(path, cfg); !errors.As(err, &be) {
			t.Fatalf("plan with a 1-byte budget: %v, want a BudgetError", err)
		}
		cfg.RAMBudget = be.Min
		cfg.DropPageCache = os.Getenv("QSF_SERVE_DROP_CACHE") != ""
	}
	m, err := qsf.Load(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s, err := server.New(m, server.Options{Parallel: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ts := httptest.NewServer(s)
	defer ts.Close()
	const tokens = 96
	run := func(clients int) (rate float64, first time.Duration) {
		var mu sync.Mutex
		var firstAt, last time.Time
		chunks := 0
		start := time.Now()
		var wg sync.WaitGroup
		for c := range clients {
			wg.Go(func() {
				b, _ := json.Marshal(map[string]any{"prompt": fmt.Sprintf("Client %d says hello to the server", c),
					"max_tokens": tokens, "temperature": 0, "stream": true})
				resp, err := http.Post(ts.URL+"/v1/completions", "application/json", bytes.NewReader(b))
				if err != nil {
					t.Error(err)
					return
				}
				defer resp.Body.Close()
				br := bufio.NewReader(resp.Body)
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						break
					}
					if strings.HasPrefix(line, "data: {") {
						now := time.Now()
						mu.Lock()
						if firstAt.IsZero() || now.Before(firstAt) {
							firstAt = now
						}
						if now.After(last) {
							last = now
						}
						chunks++
						mu.Unlock()
					}
				}
			})
		}
		wg.Wait()
		return float64(chunks-1) / last.Sub(firstAt).Seconds(), firstAt.Sub(start)
	}
	run(4) // warm up: the sessions' buffers, the page cache, the CPU's frequency
	var ones, fours []float64
	var first1, first4 time.Duration
	for range 3 {
		var r float64
		r, first1 = run(1)
		ones = append(ones, r)
		r, first4 = run(4)
		fours = append(fours, r)
	}
	one, four := median(ones), median(fours)
	t.Logf("streaming %v: aggregate decode 1 client %.2f tok/s, 4 clients %.2f tok/s (%.2fx; medians of 3 interleaved rounds: %.1f and %.1f); first chunk after %v and %v",
		m.Streaming(), one, four, four/one, ones, fours, first1.Round(time.Millisecond), first4.Round(time.Millisecond))
}

// median returns the median of v (which it sorts).
func median(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
}
