package server

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzParseRequest feeds arbitrary bodies to the request parsing of both
// generation endpoints (decoding and validation, no model): it must never
// panic, and every refusal must be a 4xx OpenAI error.
func FuzzParseRequest(f *testing.F) {
	for _, seed := range []string{
		`{"messages":[{"role":"user","content":"hi"}],"max_tokens":5,"stop":["a","b"],"temperature":0.5}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"logprobs":true,"top_logprobs":3}`,
		`{"prompt":["one"],"logprobs":2,"stop":"x","seed":-4,"n":1,"stream":true,"stream_options":{"include_usage":true}}`,
		`{"messages":[{"role":"developer","content":null}],"response_format":{"type":"json_schema","json_schema":{"schema":{"type":"object"}}}}`,
		`{"prompt":"x","top_k":-1}`, `{"messages":"x"}`, `[`, `{"prompt":"x"} {}`, `{"model":"other"}`,
	} {
		f.Add([]byte(seed), true)
		f.Add([]byte(seed), false)
	}
	s := &Server{name: "qsf", opts: Options{MaxTokens: 64, MaxBodyBytes: 1 << 16}}
	f.Fuzz(func(t *testing.T, body []byte, chat bool) {
		r := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(string(body)))
		w := httptest.NewRecorder()
		r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes)
		var req generationRequest
		err := decodeJSON(r, &req)
		if err == nil {
			var j *job
			j, err = s.parseJob(&req, chat)
			if err == nil {
				if j.opts.MaxTokens < 1 || j.opts.MaxTokens > 64 || j.opts.Sampling.Validate() != nil {
					t.Fatalf("accepted options out of range: %+v", j.opts)
				}
				if chat == (len(j.messages) == 0) {
					t.Fatalf("chat %v with %d messages", chat, len(j.messages))
				}
				return
			}
		}
		var ae *apiError
		if !errors.As(err, &ae) || ae.status < 400 || ae.status >= 500 || ae.message == "" {
			t.Fatalf("refusal %v is not a 4xx API error", err)
		}
	})
}
