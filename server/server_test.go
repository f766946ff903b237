package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/internal/testfiles"
	"github.com/qsf-llm/qsf/server"
)

const synthModel = "synth-qwen2-Q8_0.gguf"

// loadModel loads the synthetic qwen2 model (random weights) with the
// chatml format.
func loadModel(t testing.TB) *qsf.Model {
	t.Helper()
	m, err := qsf.Load(testfiles.Path(t, "models", "synthetic", synthModel), qsf.Config{Threads: 1, ContextLength: 256, ChatTemplate: "chatml"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// newServer starts an httptest server (127.0.0.1) for m.
func newServer(t testing.TB, m *qsf.Model, opts server.Options) (*server.Server, *httptest.Server) {
	t.Helper()
	s, err := server.New(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		ts.Close()
		s.Close()
	})
	return s, ts
}

// post sends body (a string or a value to marshal) and returns the status
// and decoded JSON answer.
func post(t testing.TB, ts *httptest.Server, path string, body any, key string) (int, map[string]any) {
	t.Helper()
	var b []byte
	if s, ok := body.(string); ok {
		b = []byte(s)
	} else {
		b, _ = json.Marshal(body)
	}
	req, _ := http.NewRequest("POST", ts.URL+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return do(t, req)
}

func do(t testing.TB, req *http.Request) (int, map[string]any) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s %s: answer is not JSON: %q", req.Method, req.URL.Path, raw)
	}
	return resp.StatusCode, out
}

func get(t testing.TB, ts *httptest.Server, path, key string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("GET", ts.URL+path, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return do(t, req)
}

// field walks a decoded JSON value by keys and indexes.
func field(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

// streamEvents posts a streaming request and returns the decoded data
// events (without [DONE]) and whether [DONE] ended the stream.
func streamEvents(t testing.TB, ts *httptest.Server, path string, body map[string]any) ([]map[string]any, bool) {
	t.Helper()
	body["stream"] = true
	b, _ := json.Marshal(body)
	resp, err := http.Post(ts.URL+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		raw, _ := io.ReadAll(resp.Body)
		t.Fatalf("stream: status %d, type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), raw)
	}
	var events []map[string]any
	sc := bufio.NewScanner(resp.Body)
	done := false
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("stream: line %q is not a data event", line)
		}
		if done {
			t.Fatalf("stream: event after [DONE]: %q", line)
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("stream: event %q: %v", data, err)
		}
		events = append(events, ev)
	}
	return events, done
}

// TestChatCompletion checks a greedy chat answer: its text equals
// Session.Chat's, finish_reason, usage.
func TestChatCompletion(t *testing.T) {
	m := loadModel(t)
	_, ts := newServer(t, m, server.Options{})
	msgs := []qsf.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hello there"}}
	code, out := post(t, ts, "/v1/chat/completions", map[string]any{"model": "", "messages": msgs, "max_tokens": 12, "temperature": 0}, "")
	if code != 200 {
		t.Fatalf("status %d: %v", code, out)
	}
	s, _ := m.NewSession()
	defer s.Close()
	want, err := s.Chat(context.Background(), msgs, qsf.GenerateOptions{MaxTokens: 12}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := field(out, "choices", 0, "message", "content"); got != want.Text {
		t.Errorf("content %q, want %q", got, want.Text)
	}
	if got := field(out, "choices", 0, "message", "role"); got != "assistant" {
		t.Errorf("role %v", got)
	}
	wantFinish := "stop"
	if want.Reason == qsf.StopMaxTokens {
		wantFinish = "length"
	}
	if got := field(out, "choices", 0, "finish_reason"); got != wantFinish {
		t.Errorf("finish_reason %v, want %s", got, wantFinish)
	}
	if got := field(out, "usage", "completion_tokens"); got != float64(len(want.Tokens)) {
		t.Errorf("completion_tokens %v, want %d", got, len(want.Tokens))
	}
	if got := field(out, "usage", "prompt_tokens"); got != float64(len(want.PromptTokens)) {
		t.Errorf("prompt_tokens %v, want %d", got, len(want.PromptTokens))
	}
	if field(out, "object") != "chat.completion" || !strings.HasPrefix(field(out, "id").(string), "chatcmpl-") {
		t.Errorf("object/id: %v %v", field(out, "object"), field(out, "id"))
	}
}

// TestChatStreaming checks that the streamed deltas add up to the
// non-streamed answer, with a role first, a finish_reason last, usage
// when asked and [DONE] at the end.
func TestChatStreaming(t *testing.T) {
	m := loadModel(t)
	_, ts := newServer(t, m, server.Options{})
	body := func() map[string]any {
		return map[string]any{"messages": []map[string]any{{"role": "user", "content": "Tell me a story"}},
			"max_tokens": 16, "temperature": 0}
	}
	_, whole := post(t, ts, "/v1/chat/completions", body(), "")
	b := body()
	b["stream_options"] = map[string]any{"include_usage": true}
	events, done := streamEvents(t, ts, "/v1/chat/completions", b)
	if !done {
		t.Fatal("no [DONE]")
	}
	if len(events) < 3 {
		t.Fatalf("%d events", len(events))
	}
	if field(events[0], "choices", 0, "delta", "role") != "assistant" {
		t.Errorf("first delta %v has no role", field(events[0], "choices", 0, "delta"))
	}
	var text strings.Builder
	finish := any(nil)
	for _, ev := range events {
		if field(ev, "object") != "chat.completion.chunk" {
			t.Errorf("object %v", field(ev, "object"))
		}
		if lp := field(ev, "choices", 0, "logprobs"); lp != nil {
			t.Errorf("logprobs %v in a chunk without logprobs asked", lp)
		}
		if c, ok := field(ev, "choices", 0, "delta", "content").(string); ok {
			text.WriteString(c)
		}
		if f := field(ev, "choices", 0, "finish_reason"); f != nil {
			finish = f
		}
	}
	if got, want := text.String(), field(whole, "choices", 0, "message", "content"); got != want {
		t.Errorf("streamed %q, want %q", got, want)
	}
	if finish != field(whole, "choices", 0, "finish_reason") {
		t.Errorf("finish %v, want %v", finish, field(whole, "choices", 0, "finish_reason"))
	}
	last := events[len(events)-1]
	if field(last, "usage", "completion_tokens") != field(whole, "usage", "completion_tokens") {
		t.Errorf("usage chunk %v, want %v", field(last, "usage"), field(whole, "usage"))
	}
}

// TestCompletion checks /v1/completions against Session.Complete, a stop
// string, and streaming.
func TestCompletion(t *testing.T) {
	m := loadModel(t)
	_, ts := newServer(t, m, server.Options{})
	code, out := post(t, ts, "/v1/completions", map[string]any{"prompt": "Once upon a time", "max_tokens": 10, "temperature": 0}, "")
	if code != 200 {
		t.Fatalf("status %d: %v", code, out)
	}
	s, _ := m.NewSession()
	defer s.Close()
	want, err := s.Complete(context.Background(), "Once upon a time", qsf.GenerateOptions{MaxTokens: 10}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := field(out, "choices", 0, "text"); got != want.Text {
		t.Errorf("text %q, want %q", got, want.Text)
	}
	if field(out, "object") != "text_completion" || field(out, "choices", 0, "finish_reason") != "length" {
		t.Errorf("object %v finish %v", field(out, "object"), field(out, "choices", 0, "finish_reason"))
	}
	events, done := streamEvents(t, ts, "/v1/completions", map[string]any{"prompt": "Once upon a time", "max_tokens": 10, "temperature": 0})
	var text strings.Builder
	for _, ev := range events {
		text.WriteString(field(ev, "choices", 0, "text").(string))
	}
	if !done || text.String() != want.Text {
		t.Errorf("streamed %q (done %v), want %q", text.String(), done, want.Text)
	}
	// A stop string cuts the text before it.
	if r := []rune(want.Text); len(r) > 4 {
		stop := string(r[3:5])
		_, out := post(t, ts, "/v1/completions", map[string]any{"prompt": "Once upon a time", "max_tokens": 10, "temperature": 0, "stop": []string{stop}}, "")
		got := field(out, "choices", 0, "text").(string)
		if strings.Contains(got, stop) || !strings.HasPrefix(want.Text, got) || field(out, "choices", 0, "finish_reason") != "stop" {
			t.Errorf("stop %q: text %q finish %v (whole %q)", stop, got, field(out, "choices", 0, "finish_reason"), want.Text)
		}
	}
}

// TestSamplingAndLogprobs checks that a seed makes sampling reproducible,
// and the shape of logprobs.
func TestSamplingAndLogprobs(t *testing.T) {
	m := loadModel(t)
	_, ts := newServer(t, m, server.Options{})
	body := map[string]any{"prompt": "abc", "max_tokens": 8, "temperature": 1.5, "top_k": 50, "top_p": 0.9, "min_p": 0.01,
		"seed": 7, "presence_penalty": 0.5, "frequency_penalty": 0.5}
	_, a := post(t, ts, "/v1/completions", body, "")
	_, b := post(t, ts, "/v1/completions", body, "")
	if field(a, "choices", 0, "text") != field(b, "choices", 0, "text") {
		t.Errorf("same seed, different texts: %q %q", field(a, "choices", 0, "text"), field(b, "choices", 0, "text"))
	}
	code, out := post(t, ts, "/v1/chat/completions", map[string]any{"messages": []map[string]any{{"role": "user", "content": "hi"}},
		"max_tokens": 4, "temperature": 0, "logprobs": true, "top_logprobs": 2}, "")
	if code != 200 {
		t.Fatalf("status %d: %v", code, out)
	}
	content, _ := field(out, "choices", 0, "logprobs", "content").([]any)
	if len(content) == 0 || float64(len(content)) > field(out, "usage", "completion_tokens").(float64) {
		t.Fatalf("logprobs content %v", field(out, "choices", 0, "logprobs"))
	}
	for _, e := range content {
		lp := field(e, "logprob").(float64)
		top := field(e, "top_logprobs").([]any)
		if lp > 0 || len(top) != 2 || field(top[0], "logprob").(float64) != lp || field(top[0], "token") != field(e, "token") {
			t.Errorf("entry %v: greedy token should be the top alternative", e)
		}
	}
	code, out = post(t, ts, "/v1/completions", map[string]any{"prompt": "abc", "max_tokens": 3, "temperature": 0, "logprobs": 2}, "")
	if code != 200 || len(field(out, "choices", 0, "logprobs", "token_logprobs").([]any)) == 0 {
		t.Errorf("completion logprobs: %d %v", code, field(out, "choices", 0, "logprobs"))
	}
}

// TestResponseFormat checks that json_object and json_schema answers are
// JSON (of the schema's shape).
func TestResponseFormat(t *testing.T) {
	m := loadModel(t)
	_, ts := newServer(t, m, server.Options{})
	schema := map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}},
		"required": []string{"n"}, "additionalProperties": false}
	for _, rf := range []map[string]any{
		{"type": "json_object"},
		{"type": "json_schema", "json_schema": map[string]any{"name": "x", "schema": schema}},
	} {
		code, out := post(t, ts, "/v1/chat/completions", map[string]any{"messages": []map[string]any{{"role": "user", "content": "json"}},
			"max_tokens": 200, "temperature": 0, "response_format": rf}, "")
		if code != 200 {
			t.Fatalf("%v: status %d: %v", rf, code, out)
		}
		text := field(out, "choices", 0, "message", "content").(string)
		var v map[string]any
		if field(out, "choices", 0, "finish_reason") == "stop" {
			if err := json.Unmarshal([]byte(text), &v); err != nil {
				t.Errorf("%v: answer %q is not a JSON object: %v", rf["type"], text, err)
			} else if rf["type"] == "json_schema" {
				if _, ok := v["n"].(float64); !ok || len(v) != 1 {
					t.Errorf("answer %q does not follow the schema", text)
				}
			}
		} else if !strings.HasPrefix(text, "{") {
			t.Errorf("%v: cut answer %q does not start an object", rf["type"], text)
		}
	}
	code, out := post(t, ts, "/v1/chat/completions", map[string]any{"messages": []map[string]any{{"role": "user", "content": "x"}},
		"response_format": map[string]any{"type": "yaml"}}, "")
	if code != 400 {
		t.Errorf("response_format yaml: %d %v", code, out)
	}
}

// TestOtherEndpoints checks models, health, metrics, embeddings,
// tokenize and detokenize.
func TestOtherEndpoints(t *testing.T) {
	m := loadModel(t)
	_, ts := newServer(t, m, server.Options{ModelName: "synth"})
	code, out := get(t, ts, "/v1/models", "")
	if code != 200 || field(out, "data", 0, "id") != "synth" || field(out, "object") != "list" {
		t.Errorf("models: %d %v", code, out)
	}
	if code, _ := get(t, ts, "/v1/models/synth", ""); code != 200 {
		t.Errorf("models/synth: %d", code)
	}
	if code, out := get(t, ts, "/v1/models/other", ""); code != 404 || field(out, "error", "code") != "model_not_found" {
		t.Errorf("models/other: %d %v", code, out)
	}
	if code, out := get(t, ts, "/health", ""); code != 200 || field(out, "status") != "ok" {
		t.Errorf("health: %d %v", code, out)
	}

	code, out = post(t, ts, "/tokenize", map[string]any{"content": "Hello world", "add_special": false}, "")
	want := m.Tokenize("Hello world", qsf.TokenizeOptions{NoSpecial: true})
	got, _ := json.Marshal(field(out, "tokens"))
	wantJSON, _ := json.Marshal(want)
	if code != 200 || string(got) != string(wantJSON) {
		t.Errorf("tokenize: %d %s, want %s", code, got, wantJSON)
	}
	code, out = post(t, ts, "/detokenize", map[string]any{"tokens": want}, "")
	if code != 200 || field(out, "content") != m.Detokenize(want) {
		t.Errorf("detokenize: %d %v", code, out)
	}
	if code, _ := post(t, ts, "/detokenize", map[string]any{"tokens": []int{-1}}, ""); code != 400 {
		t.Errorf("detokenize of -1: %d", code)
	}

	code, out = post(t, ts, "/v1/embeddings", map[string]any{"model": "synth", "input": []string{"first text", "second"}}, "")
	if code != 200 {
		t.Fatalf("embeddings: %d %v", code, out)
	}
	s, _ := m.NewSession()
	defer s.Close()
	raw, _ := s.Embed(context.Background(), "second")
	e1 := field(out, "data", 1, "embedding").([]any)
	if len(e1) != m.Info().Embedding || field(out, "data", 1, "index") != 1.0 {
		t.Fatalf("embedding length %d, want %d", len(e1), m.Info().Embedding)
	}
	var norm, dot float64
	for i, v := range e1 {
		norm += v.(float64) * v.(float64)
		dot += v.(float64) * float64(raw[i])
	}
	var rawNorm float64
	for _, v := range raw {
		rawNorm += float64(v) * float64(v)
	}
	if norm < 0.999 || norm > 1.001 || dot*dot < 0.999*rawNorm {
		t.Errorf("embedding is not Session.Embed scaled to unit length: |e|²=%v, cos²=%v", norm, dot*dot/rawNorm)
	}
	code, out = post(t, ts, "/v1/embeddings", map[string]any{"input": "x", "encoding_format": "base64"}, "")
	if s, _ := field(out, "data", 0, "embedding").(string); code != 200 || len(s) == 0 {
		t.Errorf("base64 embedding: %d %v", code, out)
	}

	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, name := range []string{`qsf_requests_total{path="/v1/embeddings",code="200"} 2`, "qsf_queue_depth 0",
		"qsf_completion_tokens_total", "qsf_decode_tokens_per_second", "qsf_kv_cache_tokens", "# TYPE qsf_requests_total counter"} {
		if !strings.Contains(string(body), name) {
			t.Errorf("metrics lack %q:\n%s", name, body)
		}
	}
}

// TestErrors checks the 4xx answers and their OpenAI error objects.
func TestErrors(t *testing.T) {
	m := loadModel(t)
	_, ts := newServer(t, m, server.Options{MaxBodyBytes: 1 << 10, MaxTokens: 64})
	user := []map[string]any{{"role": "user", "content": "hi"}}
	for _, tc := range []struct {
		name, path string
		body       any
		status     int
		code       string
	}{
		{"malformed", "/v1/chat/completions", `{"messages": [`, 400, "invalid_request"},
		{"not an object", "/v1/chat/completions", `[1,2]`, 400, "invalid_request"},
		{"wrong type", "/v1/chat/completions", `{"messages": "hi"}`, 400, "invalid_request"},
		{"wrong type max_tokens", "/v1/chat/completions", map[string]any{"messages": user, "max_tokens": "ten"}, 400, "invalid_request"},
		{"no messages", "/v1/chat/completions", map[string]any{"messages": []any{}}, 400, "invalid_request"},
		{"bad role", "/v1/chat/completions", map[string]any{"messages": []map[string]any{{"role": "robot", "content": "x"}}}, 400, "invalid_request"},
		{"unknown model", "/v1/chat/completions", map[string]any{"model": "gpt-9", "messages": user}, 404, "model_not_found"},
		{"n=2", "/v1/chat/completions", map[string]any{"messages": user, "n": 2}, 400, "invalid_request"},
		{"max_tokens over the cap", "/v1/chat/completions", map[string]any{"messages": user, "max_tokens": 65}, 400, "invalid_request"},
		{"temperature", "/v1/chat/completions", map[string]any{"messages": user, "temperature": -1}, 400, "invalid_request"},
		{"top_p", "/v1/chat/completions", map[string]any{"messages": user, "top_p": 2}, 400, "invalid_request"},
		{"penalty", "/v1/chat/completions", map[string]any{"messages": user, "presence_penalty": 3}, 400, "invalid_request"},
		{"tools", "/v1/chat/completions", map[string]any{"messages": user, "tools": []any{map[string]any{"type": "function"}}}, 400, "invalid_request"},
		{"stop type", "/v1/completions", map[string]any{"prompt": "x", "stop": 3}, 400, "invalid_request"},
		{"no prompt", "/v1/completions", map[string]any{}, 400, "invalid_request"},
		{"bad schema", "/v1/chat/completions", map[string]any{"messages": user, "response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"schema": 5}}}, 400, "invalid_request"},
		{"oversized", "/v1/completions", map[string]any{"prompt": strings.Repeat("x", 2000)}, 413, "request_too_large"},
		{"embeddings type", "/v1/embeddings", map[string]any{"input": 5}, 400, "invalid_request"},
		{"tokenize type", "/tokenize", map[string]any{"content": 5}, 400, "invalid_request"},
		{"unknown path", "/v1/nothing", map[string]any{}, 404, "not_found"},
		{"long prompt", "/v1/completions", map[string]any{"prompt": strings.Repeat("ab ", 300)}, 400, "context_length_exceeded"},
	} {
		code, out := post(t, ts, tc.path, tc.body, "")
		if code != tc.status || field(out, "error", "code") != tc.code {
			t.Errorf("%s: %d %v, want %d %s", tc.name, code, out, tc.status, tc.code)
		}
		if msg, _ := field(out, "error", "message").(string); msg == "" || strings.Contains(msg, "goroutine") || field(out, "error", "type") == nil {
			t.Errorf("%s: error object %v", tc.name, out)
		}
	}
	if code, _ := get(t, ts, "/v1/chat/completions", ""); code != 405 && code != 404 {
		t.Errorf("GET on a POST route: %d", code)
	}
}

// TestAPIKey checks that every route but /health needs the key.
func TestAPIKey(t *testing.T) {
	m := loadModel(t)
	_, ts := newServer(t, m, server.Options{APIKey: "sekret"})
	for _, path := range []string{"/v1/models", "/metrics", "/v1/models/qsf"} {
		for _, key := range []string{"", "wrong"} {
			if code, out := get(t, ts, path, key); code != 401 || field(out, "error", "code") != "invalid_api_key" {
				t.Errorf("GET %s with key %q: %d %v", path, key, code, out)
			}
		}
	}
	for _, path := range []string{"/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/tokenize", "/detokenize", "/nowhere"} {
		if code, _ := post(t, ts, path, map[string]any{}, ""); code != 401 {
			t.Errorf("POST %s without key: %d", path, code)
		}
	}
	if code, _ := get(t, ts, "/health", ""); code != 200 {
		t.Errorf("health without key: %d", code)
	}
	if code, _ := get(t, ts, "/v1/models", "sekret"); code != 200 {
		t.Errorf("models with key: %d", code)
	}
	req, _ := http.NewRequest("GET", ts.URL+"/v1/models", nil)
	req.Header.Set("Authorization", "sekret")
	if code, _ := do(t, req); code != 401 {
		t.Errorf("key without Bearer: %d", code)
	}
}
