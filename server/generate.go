package server

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/grammar"
	"github.com/qsf-llm/qsf/grammar/jsonschema"
)

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) { s.generate(w, r, true) }

func (s *Server) handleCompletion(w http.ResponseWriter, r *http.Request) { s.generate(w, r, false) }

// usage is the token counts of an answer.
type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	Details          *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details,omitempty"`
}

// tokenLogprob is one entry of a chat answer's logprobs.content.
type tokenLogprob struct {
	Token       string         `json:"token"`
	Logprob     float32        `json:"logprob"`
	Bytes       []int          `json:"bytes"`
	TopLogprobs []tokenLogprob `json:"top_logprobs,omitempty"`
}

// generate serves /v1/chat/completions (chat) and /v1/completions.
func (s *Server) generate(w http.ResponseWriter, r *http.Request, chat bool) {
	var req generationRequest
	if err := decodeJSON(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.liftReadDeadline(w)
	j, err := s.parseJob(&req, chat)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.checkGrammar(&j.opts); err != nil {
		s.writeError(w, r, err)
		return
	}
	var prompt []int
	if chat {
		if prompt, err = s.m.TokenizeChat(j.messages, true); err != nil {
			s.writeError(w, r, badRequest("messages: %v", err))
			return
		}
	} else {
		prompt = s.m.Tokenize(j.prompt, qsf.TokenizeOptions{})
		if len(prompt) == 0 {
			s.writeError(w, r, badRequest("prompt: empty"))
			return
		}
	}
	if len(prompt) >= s.info.ContextLength {
		s.writeError(w, r, &apiError{http.StatusBadRequest, "invalid_request_error", "context_length_exceeded",
			fmt.Sprintf("the prompt is %d tokens, the context holds %d", len(prompt), s.info.ContextLength)})
		return
	}

	ctx := r.Context()
	sl, err := s.acquire(ctx, prompt)
	if err != nil {
		if ctx.Err() == nil {
			s.writeError(w, r, err)
		}
		return
	}
	defer s.pool.release(sl)

	id := newID(chat)
	created := time.Now().Unix()
	var logprobs []qsf.Token // the tokens with their logprobs, when asked and not streamed
	var fn func(qsf.Token) error
	var sse *sseWriter
	if j.stream {
		sse = &sseWriter{w: w, s: s}
		if err := sse.start(); err != nil {
			return
		}
		if chat {
			first := s.chunk(id, created, chat, map[string]any{"role": "assistant", "content": ""}, nil, nil)
			if err := sse.send(first); err != nil {
				return
			}
		}
		sse.goAsync()
		defer sse.sync()
		text := s.newTextChunk(id, created, chat)
		fn = func(t qsf.Token) error {
			if t.Text == "" && !(j.opts.Logprobs && t.ID >= 0) {
				return nil
			}
			if j.opts.Logprobs && t.ID >= 0 {
				return sse.send(s.chunk(id, created, chat, t.Text, s.logprobsOf(chat, []qsf.Token{t}), nil))
			}
			if text == nil {
				return sse.send(s.chunk(id, created, chat, t.Text, nil, nil))
			}
			return sse.sendText(text, t.Text)
		}
	} else {
		fn = func(t qsf.Token) error {
			if j.opts.Logprobs && t.ID >= 0 {
				logprobs = append(logprobs, t)
			}
			return nil
		}
	}

	var res qsf.ChatResult
	if chat {
		res, err = sl.s.Chat(ctx, j.messages, j.opts, fn)
	} else {
		res, err = sl.s.Complete(ctx, j.prompt, j.opts, fn)
	}
	if sse != nil {
		sse.sync() // the streamed tokens are written before what follows
	}
	st := sl.s.Stats()
	u := usage{PromptTokens: res.CachedTokens + len(res.PromptTokens), CompletionTokens: len(res.Tokens)}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	u.Details = &struct {
		CachedTokens int `json:"cached_tokens"`
	}{res.CachedTokens}
	s.metrics.generation(u.PromptTokens, res.CachedTokens, u.CompletionTokens, st.PrefillTime, st.DecodeTime)
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, errClientGone) {
			s.log.InfoContext(ctx, "generation cancelled", "id", id, "tokens", len(res.Tokens))
			return
		}
		if sse != nil && sse.started {
			s.log.ErrorContext(ctx, "generation failed", "id", id, "err", err)
			sse.send(map[string]any{"error": map[string]any{"message": "generation failed", "type": "server_error", "code": "internal_error"}})
			return
		}
		s.writeError(w, r, s.generationError(err))
		return
	}
	finish := finishReason(res.Reason)
	if sse != nil {
		var delta any = map[string]any{}
		if !chat {
			delta = ""
		}
		if sse.send(s.chunk(id, created, chat, delta, nil, &finish)) != nil {
			return
		}
		if j.includeUsage {
			if sse.send(map[string]any{"id": id, "object": chunkObject(chat), "created": created, "model": s.name,
				"choices": []any{}, "usage": u}) != nil {
				return
			}
		}
		sse.done()
		return
	}
	choice := map[string]any{"index": 0, "finish_reason": finish, "logprobs": nil}
	if j.opts.Logprobs {
		choice["logprobs"] = s.logprobsOf(chat, logprobs)
	}
	object := "text_completion"
	if chat {
		object = "chat.completion"
		choice["message"] = map[string]any{"role": "assistant", "content": res.Text}
	} else {
		choice["text"] = res.Text
	}
	s.extendWrite(w)
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": object, "created": created, "model": s.name,
		"choices": []any{choice}, "usage": u, "system_fingerprint": "qsf"})
}

// checkGrammar compiles a response_format schema now, so that a schema
// QSF cannot turn into a grammar is a 400 before a session is taken.
func (s *Server) checkGrammar(o *qsf.GenerateOptions) error {
	if len(o.JSONSchema) == 0 {
		return nil
	}
	text, err := jsonschema.ToGBNF(o.JSONSchema)
	if err != nil {
		return badRequest("response_format: %v", err)
	}
	g, err := grammar.Parse(text)
	if err != nil {
		return badRequest("response_format: %v", err)
	}
	o.Grammar, o.JSONSchema = g, nil
	return nil
}

// generationError turns a library error into the client's answer.
func (s *Server) generationError(err error) error {
	switch {
	case errors.Is(err, qsf.ErrInvalidOption):
		return badRequest("%v", err)
	case errors.Is(err, qsf.ErrContextFull):
		return &apiError{http.StatusBadRequest, "invalid_request_error", "context_length_exceeded", err.Error()}
	case errors.Is(err, qsf.ErrClosed):
		return errShuttingDown
	case errors.Is(err, qsf.ErrGrammarStuck):
		return &apiError{http.StatusBadRequest, "invalid_request_error", "grammar_stuck", err.Error()}
	}
	return err
}

// finishReason is OpenAI's name for why generation ended.
func finishReason(r qsf.StopReason) string {
	switch r {
	case qsf.StopMaxTokens, qsf.StopContext:
		return "length"
	}
	return "stop"
}

func chunkObject(chat bool) string {
	if chat {
		return "chat.completion.chunk"
	}
	return "text_completion"
}

// chunk is one streamed event: delta is the chat delta (an object or the
// text), or the completion text.
func (s *Server) chunk(id string, created int64, chat bool, delta any, logprobs any, finish *string) map[string]any {
	choice := map[string]any{"index": 0, "finish_reason": finish, "logprobs": logprobs}
	if chat {
		if text, ok := delta.(string); ok {
			delta = map[string]any{"content": text}
		}
		choice["delta"] = delta
	} else {
		choice["text"] = delta
	}
	return map[string]any{"id": id, "object": chunkObject(chat), "created": created, "model": s.name,
		"choices": []any{choice}, "system_fingerprint": "qsf"}
}

// textChunk is the encoding of a streamed text chunk without logprobs,
// cut where the text goes: every token's chunk is the same but for the
// text, so only the text is encoded per token.
type textChunk struct {
	prefix, suffix []byte
}

// textMark stands for the text in a textChunk's template.
const textMark = "\x00\x01qsf-text\x01\x00"

// newTextChunk returns the textChunk of the stream id (s.chunk's encoding
// for any text is prefix, the text's JSON string, suffix), or nil when the
// template holds textMark's encoding other than once (a model name holding
// it).
func (s *Server) newTextChunk(id string, created int64, chat bool) *textChunk {
	b, err := json.Marshal(s.chunk(id, created, chat, textMark, nil, nil))
	mark, _ := json.Marshal(textMark)
	if err != nil || bytes.Count(b, mark) != 1 {
		return nil
	}
	i := bytes.Index(b, mark)
	return &textChunk{prefix: b[:i], suffix: b[i+len(mark):]}
}

// logprobsOf formats tokens' logprobs as the endpoint does: chat as
// {"content":[...]}, completions as parallel lists.
func (s *Server) logprobsOf(chat bool, toks []qsf.Token) any {
	if len(toks) == 0 {
		return nil
	}
	if chat {
		content := make([]tokenLogprob, 0, len(toks))
		for _, t := range toks {
			if t.ID < 0 {
				continue
			}
			e := s.entry(t.ID, t.Logprob)
			e.TopLogprobs = []tokenLogprob{}
			for _, alt := range t.TopLogprobs {
				e.TopLogprobs = append(e.TopLogprobs, s.entry(alt.ID, alt.Logprob))
			}
			content = append(content, e)
		}
		return map[string]any{"content": content}
	}
	var tokens []string
	var lps []float32
	var tops []map[string]float32
	offsets := []int{}
	off := 0
	for _, t := range toks {
		if t.ID < 0 {
			continue
		}
		piece := s.m.Piece(t.ID)
		tokens = append(tokens, piece)
		lps = append(lps, t.Logprob)
		offsets = append(offsets, off)
		off += len(piece)
		top := map[string]float32{}
		for _, alt := range t.TopLogprobs {
			top[s.m.Piece(alt.ID)] = alt.Logprob
		}
		tops = append(tops, top)
	}
	return map[string]any{"tokens": tokens, "token_logprobs": lps, "top_logprobs": tops, "text_offset": offsets}
}

// entry is a chat logprob entry for token id.
func (s *Server) entry(id int, lp float32) tokenLogprob {
	piece := s.m.Piece(id)
	b := make([]int, len(piece))
	for i := range len(piece) {
		b[i] = int(piece[i])
	}
	return tokenLogprob{Token: piece, Logprob: lp, Bytes: b}
}

// newID returns a fresh response id.
func newID(chat bool) string {
	var b [12]byte
	rand.Read(b[:])
	if chat {
		return "chatcmpl-" + hex.EncodeToString(b[:])
	}
	return "cmpl-" + hex.EncodeToString(b[:])
}

// errClientGone is returned by a streaming callback when the client can
// no longer be written to.
var errClientGone = errors.New("server: client gone")

// sseWriter writes Server-Sent Events.
type sseWriter struct {
	w       http.ResponseWriter
	s       *Server
	rc      *http.ResponseController
	started bool
	buf     []byte        // the event being written, reused
	text    bytes.Buffer  // a text's JSON encoding, reused
	enc     *json.Encoder // encodes into text
	failed  atomic.Bool   // a write to the client failed

	// While the writer goroutine runs (goAsync to sync).
	queue  chan []byte   // the events for it to write
	free   chan []byte   // the event buffers not queued
	exited chan struct{} // closed when it returns
}

func (e *sseWriter) start() error {
	h := e.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	e.rc = http.NewResponseController(e.w)
	e.s.extendWrite(e.w)
	e.w.WriteHeader(http.StatusOK)
	e.started = true
	if err := e.rc.Flush(); err != nil {
		return errClientGone
	}
	return nil
}

// send writes one "data: {json}" event and flushes it.
func (e *sseWriter) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return e.event(b, nil, nil)
}

// sendText writes the event of c with text, as send(s.chunk(...)) would.
func (e *sseWriter) sendText(c *textChunk, text string) error {
	if e.enc == nil {
		e.enc = json.NewEncoder(&e.text)
	}
	e.text.Reset()
	if err := e.enc.Encode(text); err != nil {
		return err
	}
	quoted := bytes.TrimSuffix(e.text.Bytes(), []byte("\n")) // Encode ends each value with a newline
	return e.event(c.prefix, quoted, c.suffix)
}

func (e *sseWriter) write(b []byte) error { return e.event(b, nil, nil) }

// event writes the event whose data is a, b and c, and flushes it; while
// the writer goroutine runs (goAsync), it queues the event for it instead
// and returns at once (an error if an earlier write failed).
func (e *sseWriter) event(a, b, c []byte) error {
	if e.failed.Load() {
		return errClientGone
	}
	if e.queue == nil {
		e.buf = append(append(append(append(append(e.buf[:0], "data: "...), a...), b...), c...), "\n\n"...)
		if err := e.put(e.buf, true); err != nil {
			e.failed.Store(true)
			return err
		}
		return nil
	}
	buf := <-e.free // waits while the client is that many events behind
	e.queue <- append(append(append(append(append(buf[:0], "data: "...), a...), b...), c...), "\n\n"...)
	return nil
}

// sseQueue is how many events may wait for the writer goroutine.
const sseQueue = 8

// goAsync starts a goroutine that writes the events from now on, so that
// generation does not wait for each write to the client's connection
// (a batched decoding step waits for the slowest of its sessions); sync
// stops it.
func (e *sseWriter) goAsync() {
	e.queue, e.free, e.exited = make(chan []byte, sseQueue), make(chan []byte, sseQueue), make(chan struct{})
	for range sseQueue {
		e.free <- nil
	}
	go e.writeLoop()
}

// writeLoop writes the queued events, flushing when none is left queued.
func (e *sseWriter) writeLoop() {
	defer close(e.exited)
	for b := range e.queue {
		if !e.failed.Load() && e.put(b, len(e.queue) == 0) != nil {
			e.failed.Store(true)
		}
		e.free <- b
	}
}

// sync waits for the queued events to be written and stops the writer
// goroutine: later events are written at once. It is safe to call more
// than once.
func (e *sseWriter) sync() {
	if e.queue == nil {
		return
	}
	close(e.queue)
	<-e.exited
	e.queue = nil
}

// put writes an event to the client, and flushes it if flush.
func (e *sseWriter) put(event []byte, flush bool) error {
	if e.s.opts.WriteTimeout > 0 {
		e.rc.SetWriteDeadline(time.Now().Add(e.s.opts.WriteTimeout))
	}
	if _, err := e.w.Write(event); err != nil {
		return errClientGone
	}
	if !flush {
		return nil
	}
	if err := e.rc.Flush(); err != nil {
		return errClientGone
	}
	return nil
}

// done writes the closing "data: [DONE]" event.
func (e *sseWriter) done() { e.write([]byte("[DONE]")) }
