package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/server"
)

// metricValue reads one unlabelled value from /metrics.
func metricValue(t *testing.T, ts *httptest.Server, name string) float64 {
	t.Helper()
	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var v float64
		if rest, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			fmt.Sscan(rest, &v)
			return v
		}
	}
	t.Fatalf("metric %s not found", name)
	return 0
}

// openStream starts a streaming completion and returns its response
// after the first event has arrived.
func openStream(t *testing.T, ctx context.Context, ts *httptest.Server, maxTokens int) (*http.Response, *bufio.Reader) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"prompt": "Once upon a time", "max_tokens": maxTokens, "temperature": 0, "stream": true})
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/completions", bytes.NewReader(b))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("stream: status %d", resp.StatusCode)
	}
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	return resp, br
}

// waitIdle waits until no session is busy.
func waitIdle(t *testing.T, ts *httptest.Server) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if metricValue(t, ts, "qsf_sessions_busy") == 0 {
			return
		}
	}
	t.Fatal("a session is still busy after 20 s")
}

// TestDisconnectCancels closes a stream after its first event: the
// generation must stop long before max_tokens and free its session.
func TestDisconnectCancels(t *testing.T) {
	m := loadModel(t)
	_, ts := newServer(t, m, server.Options{})
	const maxTokens = 240
	ctx, cancel := context.WithCancel(context.Background())
	resp, _ := openStream(t, ctx, ts, maxTokens)
	cancel()
	resp.Body.Close()
	waitIdle(t, ts)
	got := metricValue(t, ts, "qsf_completion_tokens_total")
	t.Logf("the cancelled stream generated %v of %d tokens", got, maxTokens)
	if got >= maxTokens {
		t.Errorf("the cancelled stream generated %v tokens: not cancelled", got)
	}
}

// TestQueueFull fills the only session and the queue: the next request
// gets 429 with Retry-After, and succeeds once the session is free.
func TestQueueFull(t *testing.T) {
	m := loadModel(t)
	_, ts := newServer(t, m, server.Options{Parallel: 1, QueueLimit: -1})
	ctx, cancel := context.WithCancel(context.Background())
	resp, _ := openStream(t, ctx, ts, 240)
	b := strings.NewReader(`{"prompt":"x","max_tokens":2}`)
	r2, err := http.Post(ts.URL+"/v1/completions", "application/json", b)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(r2.Body)
	r2.Body.Close()
	if r2.StatusCode != 429 || r2.Header.Get("Retry-After") == "" || !strings.Contains(string(body), `"queue_full"`) {
		t.Errorf("second request: %d Retry-After %q %s, want 429", r2.StatusCode, r2.Header.Get("Retry-After"), body)
	}
	cancel()
	resp.Body.Close()
	waitIdle(t, ts)
	if code, out := post(t, ts, "/v1/completions", map[string]any{"prompt": "x", "max_tokens": 2}, ""); code != 200 {
		t.Errorf("after the session is free: %d %v", code, out)
	}
	if v := metricValue(t, ts, "qsf_requests_rejected_total"); v != 1 {
		t.Errorf("qsf_requests_rejected_total %v, want 1", v)
	}
}

// TestParallelEqualsSolo runs four greedy conversations concurrently on
// four sessions, decoded together by the batcher: each answer must equal
// the one a lone session gives.
func TestParallelEqualsSolo(t *testing.T) {
	m := loadModel(t)
	_, ts := newServer(t, m, server.Options{Parallel: 4})
	prompts := []string{"The sky", "A long time ago", "Numbers: 1 2 3", "Hello"}
	got := make([]string, len(prompts))
	var wg sync.WaitGroup
	for i, p := range prompts {
		wg.Go(func() {
			_, out := post(t, ts, "/v1/chat/completions", map[string]any{"messages": []map[string]any{{"role": "user", "content": p}},
				"max_tokens": 96, "temperature": 0}, "")
			got[i], _ = field(out, "choices", 0, "message", "content").(string)
		})
	}
	wg.Wait()
	steps, toks := metricValue(t, ts, "qsf_batch_steps_total"), metricValue(t, ts, "qsf_batch_tokens_total")
	// Whether the requests overlap depends on timing, so how much was
	// batched is logged, not required (TestBatcherEqualsSolo starts its
	// sessions together); every answer must equal its solo run anyway.
	t.Logf("batcher: %v tokens in %v steps (batched: %v)", toks, steps, toks > steps)
	s, _ := m.NewSession()
	defer s.Close()
	for i, p := range prompts {
		s.Reset()
		want, err := s.Chat(context.Background(), []qsf.Message{{Role: "user", Content: p}}, qsf.GenerateOptions{MaxTokens: 96}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got[i] != want.Text {
			t.Errorf("%q: concurrent answer %q, solo %q", p, got[i], want.Text)
		}
	}
}

// TestConversationReuse interleaves two conversations on two sessions:
// each second turn must go to the session holding its first turn and
// reuse its cache.
func TestConversationReuse(t *testing.T) {
	m := loadModel(t)
	_, ts := newServer(t, m, server.Options{Parallel: 2})
	turn := func(msgs []map[string]any) map[string]any {
		code, out := post(t, ts, "/v1/chat/completions", map[string]any{"messages": msgs, "max_tokens": 6, "temperature": 0}, "")
		if code != 200 {
			t.Fatalf("status %d: %v", code, out)
		}
		return out
	}
	a := []map[string]any{{"role": "system", "content": "You are A."}, {"role": "user", "content": "first question of A"}}
	b := []map[string]any{{"role": "system", "content": "You are B, another assistant."}, {"role": "user", "content": "B asks"}}
	outA, outB := turn(a), turn(b)
	for _, c := range []struct {
		msgs []map[string]any
		prev map[string]any
	}{{a, outA}, {b, outB}} {
		msgs := append(slices.Clone(c.msgs), map[string]any{"role": "assistant", "content": field(c.prev, "choices", 0, "message", "content")},
			map[string]any{"role": "user", "content": "and then?"})
		out := turn(msgs)
		cached := field(out, "usage", "prompt_tokens_details", "cached_tokens").(float64)
		prevPrompt := field(c.prev, "usage", "prompt_tokens").(float64)
		if cached < prevPrompt {
			t.Errorf("second turn reused %v tokens, want at least the first turn's prompt (%v)", cached, prevPrompt)
		}
	}
}

// TestLoad runs 8 clients × 20 requests (chat and completions, streamed
// or not, some disconnecting early, some malformed or oversized): every
// request must get exactly one right answer, and the goroutines must go
// back to their number before the test.
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	m := loadModel(t)
	s, err := server.New(m, server.Options{Parallel: 2, QueueLimit: 64, MaxBodyBytes: 8 << 10, MaxTokens: 32})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before := runtime.NumGoroutine()
	ts := httptest.NewServer(s)
	const clients, requests = 8, 20
	type result struct {
		kind    string
		status  int
		elapsed time.Duration
		ok      bool
	}
	results := make([][]result, clients)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), 1))
			for i := range requests {
				results[c] = append(results[c], loadRequest(ts, rng, c, i))
			}
		})
	}
	wg.Wait()
	var lat []time.Duration
	counts := map[string]int{}
	total := 0
	for c := range clients {
		if len(results[c]) != requests {
			t.Errorf("client %d: %d answers, want %d", c, len(results[c]), requests)
		}
		for _, r := range results[c] {
			total++
			counts[r.kind]++
			if !r.ok {
				t.Errorf("client %d: %s request: status %d, wrong answer", c, r.kind, r.status)
			}
			if r.kind != "disconnect" {
				lat = append(lat, r.elapsed)
			}
		}
	}
	slices.Sort(lat)
	t.Logf("%d requests %v: latency p50 %v p99 %v (max %v)", total, counts, lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1])
	waitIdle(t, ts)
	ts.CloseClientConnections()
	ts.Close()
	http.DefaultClient.CloseIdleConnections()
	var after int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if after = runtime.NumGoroutine(); after <= before {
			break
		}
	}
	if after > before {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines: %d before, %d after\n%s", before, after, buf[:runtime.Stack(buf, true)])
	}
}

// loadRequest sends one request of a random kind and checks its answer.
func loadRequest(ts *httptest.Server, rng *rand.Rand, c, i int) (r struct {
	kind    string
	status  int
	elapsed time.Duration
	ok      bool
}) {
	kinds := []string{"chat", "chat-stream", "completion", "completion-stream", "disconnect", "malformed", "oversized", "wrong-type"}
	r.kind = kinds[rng.IntN(len(kinds))]
	prompt := fmt.Sprintf("client %d request %d", c, i)
	body := map[string]any{"max_tokens": 1 + rng.IntN(24), "temperature": 0}
	path := "/v1/completions"
	if strings.HasPrefix(r.kind, "chat") {
		path = "/v1/chat/completions"
		body["messages"] = []map[string]any{{"role": "user", "content": prompt}}
	} else {
		body["prompt"] = prompt
	}
	body["stream"] = strings.HasSuffix(r.kind, "stream") || r.kind == "disconnect"
	raw, _ := json.Marshal(body)
	switch r.kind {
	case "malformed":
		raw = []byte(`{"prompt": "x", "max_tokens": `)
	case "oversized":
		raw = []byte(`{"prompt": "` + strings.Repeat("y", 10<<10) + `"}`)
	case "wrong-type":
		raw = []byte(`{"prompt": "x", "temperature": "hot"}`)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+path, bytes.NewReader(raw))
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return r
	}
	defer resp.Body.Close()
	r.status = resp.StatusCode
	switch r.kind {
	case "disconnect":
		br := bufio.NewReader(resp.Body)
		_, err := br.ReadString('\n')
		cancel()
		r.ok = resp.StatusCode == 200 && err == nil
	case "malformed", "wrong-type":
		b, _ := io.ReadAll(resp.Body)
		r.ok = resp.StatusCode == 400 && bytes.Contains(b, []byte(`"invalid_request"`))
	case "oversized":
		b, _ := io.ReadAll(resp.Body)
		r.ok = resp.StatusCode == 413 && bytes.Contains(b, []byte(`"request_too_large"`))
	case "chat-stream", "completion-stream":
		b, err := io.ReadAll(resp.Body)
		r.ok = resp.StatusCode == 200 && err == nil && bytes.Count(b, []byte("data: [DONE]\n\n")) == 1 &&
			bytes.HasSuffix(b, []byte("data: [DONE]\n\n")) && bytes.Count(b, []byte(`"finish_reason":"`)) == 1
	default:
		var out map[string]any
		err := json.NewDecoder(resp.Body).Decode(&out)
		r.ok = resp.StatusCode == 200 && err == nil && len(field(out, "choices").([]any)) == 1 && field(out, "choices", 0, "finish_reason") != nil
	}
	r.elapsed = time.Since(start)
	return r
}
