package server_test

import (
	"bufio"
	"bytes"
	"context"
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
// runs under the smallest RAM budget of the server's 4 sessions (layer
// streaming; what qsf serve --parallel 4 --ram-budget plans), and with
// QSF_SERVE_DROP_CACHE set too it drops the file's pages after reading
// them (reads from the disk). It is a measurement, skipped unless
// QSF_SERVE_MODEL is set. It logs the batcher's mean batch, and the same
// figures for the same generations through the library without HTTP,
// interleaved with the others; it fails if a client's streamed text is not
// the library's. The KV cache is qsf serve's (f16, or the plan's under the
// budget), or the type QSF_SERVE_KV names.
func TestServeSpeed(t *testing.T) {
	path := os.Getenv("QSF_SERVE_MODEL")
	if path == "" {
		t.Skip("set QSF_SERVE_MODEL to a model file to measure the server")
	}
	// The KV cache qsf serve picks: f16 (llama-server's), or what the
	// plan lowers it to under the smallest budget; QSF_SERVE_KV names
	// another.
	cfg := qsf.Config{Threads: 2, ContextLength: 256, ChatTemplate: "chatml", KVType: "f16"}
	if kv := os.Getenv("QSF_SERVE_KV"); kv != "" {
		cfg.KVType = kv
	}
	if os.Getenv("QSF_SERVE_STREAM") != "" {
		cfg.KVType = os.Getenv("QSF_SERVE_KV")
		cfg.RAMBudget, cfg.Sessions = 1, 4 // the server's sessions (the library's below come on top)
		var be *plan.BudgetError
		if _, err := qsf.PlanFile(path, cfg); !errors.As(err, &be) {
			t.Fatalf("plan with a 1-byte budget: %v, want a BudgetError", err)
		}
		cfg.RAMBudget = be.Min
		cfg.DropPageCache = os.Getenv("QSF_SERVE_DROP_CACHE") != ""
		t.Logf("RAM budget %.1f MiB for %d sessions", float64(cfg.RAMBudget)/(1<<20), cfg.Sessions)
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
	// The same generations through the library alone, on sessions of the
	// same model decoded together by a Batcher of their own: what the
	// HTTP layer costs, measured in the same run.
	b := m.NewBatcher()
	defer b.Close()
	sessions := make([]*qsf.Session, 4)
	for i := range sessions {
		if sessions[i], err = m.NewSession(); err != nil {
			t.Fatal(err)
		}
		defer sessions[i].Close()
		sessions[i].SetBatcher(b)
	}
	const tokens = 96
	prompt := func(c int) string { return fmt.Sprintf("Client %d says hello to the server", c) }
	// run generates for clients at once, over HTTP or in the library, and
	// returns the aggregate rate of chunks (tokens) from the first to the
	// last, the time to the first, and each client's text; and the
	// aggregate rate while every client decodes (from the last client's
	// first chunk to the first client's last: without the steps that
	// evaluate the other clients' prompts, or that end early finishers).
	run := func(clients int, lib bool) (rate float64, first time.Duration, texts []string, allRate float64) {
		var mu sync.Mutex
		var firstAt, last time.Time
		chunks := 0
		at := make([][]time.Time, clients) // each client's chunk times
		for c := range at {
			at[c] = make([]time.Time, 0, tokens+8)
		}
		mark := func(c int) {
			now := time.Now()
			mu.Lock()
			if firstAt.IsZero() || now.Before(firstAt) {
				firstAt = now
			}
			if now.After(last) {
				last = now
			}
			chunks++
			at[c] = append(at[c], now)
			mu.Unlock()
		}
		texts = make([]string, clients)
		start := time.Now()
		var wg sync.WaitGroup
		for c := range clients {
			wg.Go(func() {
				if lib {
					s := sessions[c]
					s.Reset()
					res, err := s.Complete(context.Background(), prompt(c), qsf.GenerateOptions{MaxTokens: tokens,
						Sampling: qsf.SamplerOptions{TopP: 1, Seed: -1}}, func(t qsf.Token) error {
						if t.Text != "" {
							mark(c)
						}
						return nil
					})
					if err != nil {
						t.Error(err)
					}
					texts[c] = res.Text
					return
				}
				b, _ := json.Marshal(map[string]any{"prompt": prompt(c),
					"max_tokens": tokens, "temperature": 0, "stream": true})
				resp, err := http.Post(ts.URL+"/v1/completions", "application/json", bytes.NewReader(b))
				if err != nil {
					t.Error(err)
					return
				}
				defer resp.Body.Close()
				br := bufio.NewReader(resp.Body)
				var events []string // decoded after the run, not to load the CPUs while it lasts
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						break
					}
					if strings.HasPrefix(line, "data: {") {
						mark(c)
						events = append(events, line[len("data: "):])
					}
				}
				texts[c] = strings.Join(events, "") // each ends with its newline
			})
		}
		wg.Wait()
		for c, events := range texts {
			if lib {
				break
			}
			var text strings.Builder
			for ev := range strings.Lines(events) {
				var chunk struct {
					Choices []struct{ Text string }
				}
				if err := json.Unmarshal([]byte(ev), &chunk); err != nil {
					t.Errorf("client %d: %v in %q", c, err, ev)
				}
				for _, ch := range chunk.Choices {
					text.WriteString(ch.Text)
				}
			}
			texts[c] = text.String()
		}
		var lo, hi time.Time
		for _, ts := range at {
			if len(ts) == 0 {
				return 0, 0, texts, 0 // a client without chunks, reported above
			}
			if lo.IsZero() || ts[0].After(lo) {
				lo = ts[0]
			}
			if hi.IsZero() || ts[len(ts)-1].Before(hi) {
				hi = ts[len(ts)-1]
			}
		}
		in := 0
		for _, ts := range at {
			for _, t := range ts {
				if t.After(lo) && !t.After(hi) {
					in++
				}
			}
		}
		if hi.After(lo) {
			allRate = float64(in) / hi.Sub(lo).Seconds()
		}
		return float64(chunks-1) / last.Sub(firstAt).Seconds(), firstAt.Sub(start), texts, allRate
	}
	run(4, false) // warm up: the sessions' buffers, the page cache, the CPU's frequency
	run(4, true)
	var steps, toks float64 // of the server's batcher in the 4-client runs
	var ones, fours, libOnes, libFours, alls, libAlls []float64
	var first1, first4 time.Duration
	for range 3 {
		var r, all float64
		var texts, libTexts []string
		r, first1, _, _ = run(1, false)
		ones = append(ones, r)
		steps0, toks0 := metricValue(t, ts, "qsf_batch_steps_total"), metricValue(t, ts, "qsf_batch_tokens_total")
		r, first4, texts, all = run(4, false)
		fours, alls = append(fours, r), append(alls, all)
		steps += metricValue(t, ts, "qsf_batch_steps_total") - steps0
		toks += metricValue(t, ts, "qsf_batch_tokens_total") - toks0
		r, _, _, _ = run(1, true)
		libOnes = append(libOnes, r)
		r, _, libTexts, all = run(4, true)
		libFours, libAlls = append(libFours, r), append(libAlls, all)
		if !slices.Equal(texts, libTexts) {
			t.Errorf("the streamed texts %q differ from the library's %q", texts, libTexts)
		}
	}
	one, four := median(ones), median(fours)
	t.Logf("kv %s, streaming %v: aggregate decode 1 client %.2f tok/s, 4 clients %.2f tok/s (%.2fx; medians of 3 interleaved rounds: %.1f and %.1f); first chunk after %v and %v",
		m.Plan().KVType, m.Streaming(), one, four, four/one, ones, fours, first1.Round(time.Millisecond), first4.Round(time.Millisecond))
	t.Logf("the server's batcher in the 4-client rounds: %.2f decoding tokens a step (%.0f steps)", toks/steps, steps)
	libOne, libFour := median(libOnes), median(libFours)
	t.Logf("the same in the library, without HTTP: 1 session %.2f tok/s, 4 sessions %.2f tok/s (%.2fx; %.1f and %.1f); HTTP keeps %.0f%% and %.0f%% of it",
		libOne, libFour, libFour/libOne, libOnes, libFours, 100*one/libOne, 100*four/libFour)
	all, libAll := median(alls), median(libAlls)
	t.Logf("4 clients while all 4 decode (without the steps of the others' prompts and of the early finishers): %.2f tok/s (%.2fx); in the library %.2f tok/s (%.2fx)",
		all, all/one, libAll, libAll/libOne)
}

// median returns the median of v (which it sorts).
func median(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
}
