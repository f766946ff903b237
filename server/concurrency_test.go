package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
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
	"github.com/qsf-llm/qsf/model"
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
	prompt := metricValue(t, ts, "qsf_batch_prompt_tokens_total")
	// Whether the requests overlap depends on timing, so how much was
	// batched is logged, not required (TestBatcherEqualsSolo starts its
	// sessions together); every answer must equal its solo run anyway.
	t.Logf("batcher: %v decoding and %v prompt tokens in %v steps", toks, prompt, steps)
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

// TestLoad runs 8 clients × 50 requests (8 × 12 with -short) against a
// server of 4 sessions with an API key: chat and completions, streamed or
// not, streams the client drops after a random number of events, and bad
// requests (malformed, oversized, a wrong type, an unknown model, no key,
// max_tokens over the cap). Every request must get exactly one answer
// with the right status: the server's per-route counts must grow by what
// the clients received, every response id must be new, and every
// generated text must equal a lone session's answer to the same request.
// The requests come in two halves; after the second the goroutines and
// (without -short) the live heap must be back to their level after the
// first (which, after a warm-up of prompts of every length, allocated
// what the server allocates once): the live objects within 150 (a planted
// leak of 16 bytes per request fails), the bytes within 512 KiB. Latency
// percentiles are logged.
func TestLoad(t *testing.T) {
	clients, requests := 8, 50
	if testing.Short() {
		requests = 12
	}
	m := loadModel(t)
	const key = "load-key"
	s, err := server.New(m, server.Options{Parallel: 4, QueueLimit: 64, MaxBodyBytes: 8 << 10, MaxTokens: 32, APIKey: key})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ts := httptest.NewServer(s)
	defer ts.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	lc := &loadClient{ts: ts, client: client, key: key}
	solo, err := m.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer solo.Close()

	// Prompts of 1 to about 70 tokens, one after another: passes of
	// every size, so that the buffers that grow to the largest pass of
	// each size (the worker pool's packed activations) are full grown
	// before the heap is compared.
	for k := 1; k <= model.MaxChunkRows+6; k++ {
		b, _ := json.Marshal(map[string]any{"prompt": strings.Repeat(" a", k), "max_tokens": 1})
		req, _ := http.NewRequest("POST", ts.URL+"/v1/completions", bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("warm-up prompt of %d words: status %d", k, resp.StatusCode)
		}
	}

	var goroutines int
	var heap heapLevel
	ids := make(map[uint64]bool, clients*requests) // hashes, sized before: the map does not grow the heap
	for half := range 2 {
		base := lc.requestCounts(t)
		results := make([][]loadResult, clients)
		var wg sync.WaitGroup
		for c := range clients {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(c), uint64(half)))
				for i := half * requests / 2; i < (half+1)*requests/2; i++ {
					results[c] = append(results[c], lc.do(loadKinds[rng.IntN(len(loadKinds))], rng, c, i))
				}
			})
		}
		wg.Wait()
		lc.checkLoad(t, solo, results, base, ids)
		results = nil
		client.CloseIdleConnections()
		ts.CloseClientConnections() // and the ones the server still holds
		if half == 0 {
			goroutines, heap = settle(t, -1, heapLevel{})
			continue
		}
		after, heapAfter := settle(t, goroutines, heap)
		msg := fmt.Sprintf("after the second half: %d goroutines (%d after the first), live heap %d objects, %d KiB (%d, %d KiB)",
			after, goroutines, heapAfter.objects, heapAfter.bytes>>10, heap.objects, heap.bytes>>10)
		// With -short (-race in CI) too few requests for a leak to
		// stand out of the noise: the heap is only logged.
		if after > goroutines || !heapAfter.within(heap) && !testing.Short() {
			buf := make([]byte, 1<<20)
			t.Errorf("%s\n%s", msg, buf[:runtime.Stack(buf, true)])
		} else {
			t.Log(msg)
		}
	}
}

// checkLoad checks the answers of one round of the load test (see
// TestLoad), base being the server's request counts before it.
func (lc *loadClient) checkLoad(t *testing.T, solo *qsf.Session, results [][]loadResult, base map[string]int, ids map[uint64]bool) {
	t.Helper()
	lat := map[bool][]time.Duration{} // by streamed
	kinds := map[string]int{}
	want := map[string]int{} // path and status: answers the clients received
	var answers []loadResult
	for c := range results {
		for _, r := range results[c] {
			kinds[r.kind]++
			want[fmt.Sprintf("%s %d", r.path, r.status)]++
			if !r.ok {
				t.Errorf("client %d: %s request: status %d, wrong answer", c, r.kind, r.status)
				continue
			}
			if r.id != "" {
				h := maphash.String(idSeed, r.id)
				if ids[h] {
					t.Errorf("client %d: %s request: response id %s seen twice", c, r.kind, r.id)
				}
				ids[h] = true
			}
			if r.text != nil {
				answers = append(answers, r)
				lat[r.stream] = append(lat[r.stream], r.elapsed)
			}
		}
	}
	for _, stream := range []bool{false, true} {
		l := lat[stream]
		if len(l) == 0 {
			continue
		}
		slices.Sort(l)
		t.Logf("%d generations (stream %v): latency p50 %v p99 %v (max %v)", len(l), stream, l[len(l)/2], l[len(l)*99/100], l[len(l)-1])
	}
	t.Logf("%d requests of %d clients %v", len(results)*len(results[0]), len(results), kinds)

	// The server answered each request once: its counts per path and
	// status grew by what the clients received.
	lc.waitIdle(t)
	got := lc.requestCounts(t)
	for k, n := range want {
		if got[k]-base[k] != n {
			t.Errorf("server counted %d answers %q, the clients received %d", got[k]-base[k], k, n)
		}
	}
	for k, n := range got {
		if _, ok := want[k]; !ok && n != base[k] && !strings.HasPrefix(k, "/metrics ") {
			t.Errorf("server counted %d answers %q the clients did not receive", n-base[k], k)
		}
	}

	// Each answer is a lone session's answer to its request: no request
	// got another's tokens.
	for _, r := range answers {
		solo.Reset()
		opts := qsf.GenerateOptions{MaxTokens: r.maxTokens}
		var res qsf.ChatResult
		var err error
		if r.chat {
			res, err = solo.Chat(context.Background(), []qsf.Message{{Role: "user", Content: r.prompt}}, opts, nil)
		} else {
			res, err = solo.Complete(context.Background(), r.prompt, opts, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
		if *r.text != res.Text {
			t.Errorf("%s %q: answer %q, a lone session's %q", r.kind, r.prompt, *r.text, res.Text)
		}
	}
}

var idSeed = maphash.MakeSeed()

// heapLevel is the live heap: objects and bytes.
type heapLevel struct{ objects, bytes uint64 }

// The live heap may grow from the first half of the load test to the
// second by loadObjectSlack objects and loadByteSlack bytes: a leak of an
// object per request, or of 2.5 KB, exceeds them. The noise is up to
// about 100 objects (descriptors the runtime keeps for reuse when more
// goroutines ran at once than before, closed connections' loop state) and
// 200 KiB (buffers of the worker pool that grow, and change roles, with
// the sizes of the passes).
const (
	loadObjectSlack = 150
	loadByteSlack   = 512 << 10
)

// settle waits (up to 10 s) until the goroutines are at most goroutines
// and the live heap within the slack of heap (with goroutines < 0: a
// moment for closed connections' goroutines to end), and returns both
// after a garbage collection.
func settle(t *testing.T, goroutines int, heap heapLevel) (int, heapLevel) {
	t.Helper()
	if goroutines < 0 {
		time.Sleep(200 * time.Millisecond)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		runtime.GC()
		runtime.GC() // and what sync.Pools held until the first
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		n, live := runtime.NumGoroutine(), heapLevel{ms.HeapObjects, ms.HeapAlloc}
		if goroutines < 0 || n <= goroutines && live.within(heap) || time.Now().After(deadline) {
			return n, live
		}
	}
}

// within reports whether h is within the slack of base.
func (h heapLevel) within(base heapLevel) bool {
	return h.objects <= base.objects+loadObjectSlack && h.bytes <= base.bytes+loadByteSlack
}

// loadKinds are the kinds of request the load test sends.
var loadKinds = []string{"chat", "chat-stream", "completion", "completion-stream", "disconnect",
	"malformed", "oversized", "wrong-type", "unknown-model", "no-key", "too-many-tokens"}

// loadClient sends the load test's requests.
type loadClient struct {
	ts     *httptest.Server
	client *http.Client
	key    string
}

// loadResult is one request of the load test and its answer.
type loadResult struct {
	kind, path string
	status     int
	ok         bool // the answer is right for the kind
	id         string
	elapsed    time.Duration

	// A generation's request and text (nil unless complete).
	chat, stream bool
	prompt       string
	maxTokens    int
	text         *string
}

// do sends one request of the kind and checks its answer.
func (lc *loadClient) do(kind string, rng *rand.Rand, c, i int) (r loadResult) {
	r.kind = kind
	r.prompt = fmt.Sprintf("client %d request %d", c, i)
	r.maxTokens = 1 + rng.IntN(24)
	r.chat = strings.HasPrefix(kind, "chat") || kind == "unknown-model" || kind == "no-key"
	r.stream = strings.HasSuffix(kind, "stream") || kind == "disconnect"
	body := map[string]any{"max_tokens": r.maxTokens, "temperature": 0, "stream": r.stream}
	r.path = "/v1/completions"
	if r.chat {
		r.path = "/v1/chat/completions"
		body["messages"] = []map[string]any{{"role": "user", "content": r.prompt}}
	} else {
		body["prompt"] = r.prompt
	}
	switch kind {
	case "unknown-model":
		body["model"] = "no-such-model"
	case "too-many-tokens":
		body["max_tokens"] = 33
	}
	raw, _ := json.Marshal(body)
	switch kind {
	case "malformed":
		raw = []byte(`{"prompt": "x", "max_tokens": `)
	case "oversized":
		raw = []byte(`{"prompt": "` + strings.Repeat("y", 10<<10) + `"}`)
	case "wrong-type":
		raw = []byte(`{"prompt": "x", "temperature": "hot"}`)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", lc.ts.URL+r.path, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	if kind != "no-key" {
		req.Header.Set("Authorization", "Bearer "+lc.key)
	}
	start := time.Now()
	resp, err := lc.client.Do(req)
	if err != nil {
		return r
	}
	defer resp.Body.Close()
	r.status = resp.StatusCode
	apiError := func(status int, code string) bool {
		var out map[string]any
		err := json.NewDecoder(resp.Body).Decode(&out)
		return err == nil && resp.StatusCode == status && field(out, "error", "code") == code
	}
	switch kind {
	case "disconnect":
		// Drop the stream after 1 to 3 events.
		br := bufio.NewReader(resp.Body)
		events := 0
		for range 1 + rng.IntN(3) {
			line, err := br.ReadString('\n')
			if err != nil {
				break
			}
			if strings.HasPrefix(line, "data: ") {
				events++
			}
			br.ReadString('\n') // the blank line after the event
		}
		cancel()
		r.ok = resp.StatusCode == 200 && events > 0
	case "malformed", "wrong-type", "too-many-tokens":
		r.ok = apiError(400, "invalid_request")
	case "oversized":
		r.ok = apiError(413, "request_too_large")
	case "unknown-model":
		r.ok = apiError(404, "model_not_found")
	case "no-key":
		r.ok = apiError(401, "invalid_api_key")
	case "chat-stream", "completion-stream":
		// The text is the concatenation of the chunks' deltas; every
		// chunk carries the stream's id.
		var text strings.Builder
		br := bufio.NewReader(resp.Body)
		finishes, done, bad := 0, false, resp.StatusCode != 200
		for !done && !bad {
			line, err := br.ReadString('\n')
			if err != nil {
				bad = true
				break
			}
			data, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "data: ")
			switch {
			case !ok:
				bad = line != "\n"
			case data == "[DONE]":
				done = true
			default:
				var ev map[string]any
				if json.Unmarshal([]byte(data), &ev) != nil {
					bad = true
					break
				}
				id, _ := ev["id"].(string)
				if r.id == "" {
					r.id = id
				}
				bad = bad || id != r.id
				if f := field(ev, "choices", 0, "finish_reason"); f != nil {
					finishes++
				}
				if piece, ok := field(ev, "choices", 0, "delta", "content").(string); ok {
					text.WriteString(piece)
				}
				if piece, ok := field(ev, "choices", 0, "text").(string); ok {
					text.WriteString(piece)
				}
			}
		}
		rest, _ := io.ReadAll(br)
		r.ok = done && !bad && finishes == 1 && string(rest) == "\n" && r.id != ""
		if r.ok {
			t := text.String()
			r.text = &t
		}
	default:
		var out map[string]any
		err := json.NewDecoder(resp.Body).Decode(&out)
		r.id, _ = field(out, "id").(string)
		text, _ := field(out, "choices", 0, "text").(string)
		if r.chat {
			text, _ = field(out, "choices", 0, "message", "content").(string)
		}
		r.ok = resp.StatusCode == 200 && err == nil && len(field(out, "choices").([]any)) == 1 &&
			field(out, "choices", 0, "finish_reason") != nil && r.id != ""
		if r.ok {
			r.text = &text
		}
	}
	r.elapsed = time.Since(start)
	return r
}

// get sends an authorized GET and returns the body.
func (lc *loadClient) get(t *testing.T, path string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", lc.ts.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+lc.key)
	resp, err := lc.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
	}
	return string(b)
}

// requestCounts reads qsf_requests_total from /metrics: "path status"
// to count.
func (lc *loadClient) requestCounts(t *testing.T) map[string]int {
	t.Helper()
	counts := map[string]int{}
	for _, line := range strings.Split(lc.get(t, "/metrics"), "\n") {
		var path, code string
		var n int
		if rest, ok := strings.CutPrefix(line, "qsf_requests_total{"); ok {
			labels, value, _ := strings.Cut(rest, "} ")
			for _, kv := range strings.Split(labels, ",") {
				k, v, _ := strings.Cut(kv, "=")
				v = strings.Trim(v, `"`)
				switch k {
				case "path":
					path = v
				case "code":
					code = v
				}
			}
			fmt.Sscan(value, &n)
			counts[path+" "+code] = n
		}
	}
	return counts
}

// waitIdle waits until no session is busy.
func (lc *loadClient) waitIdle(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if strings.Contains(lc.get(t, "/metrics"), "\nqsf_sessions_busy 0\n") {
			return
		}
	}
	t.Fatal("a session is still busy after 20 s")
}
