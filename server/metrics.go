package server

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// routes are the paths counted by name in qsf_requests_total; others
// count as "other", so clients cannot grow the metrics.
var routes = []string{"/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/models",
	"/tokenize", "/detokenize", "/health", "/metrics"}

// metrics counts what /metrics reports.
type metrics struct {
	mu       sync.Mutex
	requests map[[2]string]int64 // {path, status}: count

	promptTokens     atomic.Int64
	cachedTokens     atomic.Int64
	completionTokens atomic.Int64
	decodeNanos      atomic.Int64
	prefillNanos     atomic.Int64
	rejected         atomic.Int64
}

func (m *metrics) init() { m.requests = map[[2]string]int64{} }

// request counts one answered request.
func (m *metrics) request(path string, status int) {
	switch {
	case slices.Contains(routes, path):
	case strings.HasPrefix(path, "/v1/models/"):
		path = "/v1/models"
	default:
		path = "other"
	}
	m.mu.Lock()
	m.requests[[2]string{path, fmt.Sprint(status)}]++
	m.mu.Unlock()
}

// generation counts the tokens and time of one generation.
func (m *metrics) generation(prompt, cached, completion int, prefill, decode time.Duration) {
	m.promptTokens.Add(int64(prompt))
	m.cachedTokens.Add(int64(cached))
	m.completionTokens.Add(int64(completion))
	m.prefillNanos.Add(int64(prefill))
	m.decodeNanos.Add(int64(decode))
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	m := &s.metrics
	var b strings.Builder
	metric := func(name, typ, help string) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	metric("qsf_requests_total", "counter", "HTTP requests answered, by path and status.")
	m.mu.Lock()
	keys := make([][2]string, 0, len(m.requests))
	for k := range m.requests {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return strings.Compare(a[0]+" "+a[1], b[0]+" "+b[1]) })
	for _, k := range keys {
		fmt.Fprintf(&b, "qsf_requests_total{path=%q,code=%q} %d\n", k[0], k[1], m.requests[k])
	}
	m.mu.Unlock()
	counter := func(name, help string, v int64) {
		metric(name, "counter", help)
		fmt.Fprintf(&b, "%s %d\n", name, v)
	}
	gauge := func(name, help string, v float64) {
		metric(name, "gauge", help)
		fmt.Fprintf(&b, "%s %g\n", name, v)
	}
	decode := time.Duration(m.decodeNanos.Load()).Seconds()
	prefill := time.Duration(m.prefillNanos.Load()).Seconds()
	counter("qsf_prompt_tokens_total", "Prompt tokens of generation requests (cached ones included).", m.promptTokens.Load())
	counter("qsf_prompt_tokens_cached_total", "Prompt tokens reused from a session's KV cache instead of evaluated.", m.cachedTokens.Load())
	counter("qsf_completion_tokens_total", "Tokens generated.", m.completionTokens.Load())
	metric("qsf_prefill_seconds_total", "counter", "Time spent evaluating prompts, summed over sessions.")
	fmt.Fprintf(&b, "qsf_prefill_seconds_total %g\n", prefill)
	metric("qsf_decode_seconds_total", "counter", "Time spent generating tokens, summed over sessions.")
	fmt.Fprintf(&b, "qsf_decode_seconds_total %g\n", decode)
	tps := 0.0
	if decode > 0 {
		tps = float64(m.completionTokens.Load()) / decode
	}
	gauge("qsf_decode_tokens_per_second", "Tokens generated per second of decoding, per session, since the start.", math.Round(tps*100)/100)
	counter("qsf_requests_rejected_total", "Requests refused with 429 because the queue was full.", m.rejected.Load())
	if b := s.pool.batcher; b != nil {
		st := b.Stats()
		counter("qsf_batch_steps_total", "Decoding steps of the batcher (one forward pass each).", st.Steps)
		counter("qsf_batch_tokens_total", "Decoding tokens the batcher's steps evaluated (over steps: the mean batch size).", st.Tokens)
		counter("qsf_batch_prompt_tokens_total", "Prompt tokens the batcher's steps evaluated along with the decoding tokens.", st.PromptTokens)
	}
	gauge("qsf_queue_depth", "Requests waiting for a free session.", float64(s.pool.waiting.Load()))
	gauge("qsf_sessions", "Sessions (--parallel).", float64(cap(s.pool.free)))
	gauge("qsf_sessions_busy", "Sessions serving a request.", float64(s.pool.busy()))
	gauge("qsf_kv_cache_tokens", "Tokens held in the sessions' KV caches (as of their last request).", float64(s.pool.cachedTokens()))
	gauge("qsf_kv_cache_capacity_tokens", "Positions the sessions' KV caches hold in all.", float64(cap(s.pool.free)*s.info.ContextLength))
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Write([]byte(b.String()))
}
