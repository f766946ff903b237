// Package server serves a model over the OpenAI HTTP API, as an
// http.Handler an application can mount or the qsf serve command runs:
// POST /v1/chat/completions and /v1/completions (streamed as Server-Sent
// Events or not), POST /v1/embeddings, GET /v1/models, POST /tokenize and
// /detokenize, GET /health and GET /metrics (Prometheus text format).
//
// Requests are served by a pool of Options.Parallel sessions, one request
// per session at a time; a request waits for a free session, or is
// refused with 429 when Options.QueueLimit requests already wait. A
// request goes to the idle session whose KV cache shares the longest token
// prefix with its prompt, when that prefix is at least half of what the
// session holds (an empty or the least recently used session otherwise),
// so a conversation that continues an earlier one evaluates only its new
// tokens. The sessions share the model's worker threads; while several
// generate, their decoding steps run together, one forward pass over the
// next token of each (continuous batching, qsf.Batcher), and a new
// request's prompt is evaluated in chunks within the same passes, unless
// Options.NoBatching.
package server

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/qsf-llm/qsf"
)

// Options configure a Server. The zero value serves one request at a time
// without an API key.
type Options struct {
	// ModelName is the model's id in /v1/models and in answers; requests
	// naming another model get 404. Empty means the file's general.name,
	// or "qsf".
	ModelName string
	// APIKey, when set, is required as "Authorization: Bearer KEY" on
	// every route but /health (401 otherwise).
	APIKey string
	// Parallel is the number of sessions, each serving one request at a
	// time (0 means 1). Each holds a KV cache of the model's context
	// length.
	Parallel int
	// QueueLimit is the most requests that wait for a free session;
	// more get 429 with Retry-After. 0 means 4 × Parallel; negative means
	// none wait.
	QueueLimit int
	// NoBatching makes the sessions decode one after another instead of
	// together. By default, with Parallel above 1, the sessions that are
	// generating decode together (qsf.Batcher, continuous batching): one
	// forward pass per step over the next token of each.
	NoBatching bool
	// MaxBodyBytes caps a request body (413 beyond it). 0 means 4 MiB.
	MaxBodyBytes int64
	// MaxTokens caps max_tokens, and is the default when a request gives
	// none. 0 means the model's context length.
	MaxTokens int
	// WriteTimeout, when set, is how long each write to a client may take:
	// the handler moves the connection's write deadline forward before
	// every write (through http.ResponseController), so a long stream or
	// a long generation is not cut by http.Server.WriteTimeout.
	WriteTimeout time.Duration
	// Logger receives one record per request and the errors not shown to
	// clients. nil means no logging.
	Logger *slog.Logger
}

// Server answers the OpenAI API for one model. Create it with New and
// release it with Close.
type Server struct {
	m       *qsf.Model
	opts    Options
	log     *slog.Logger
	name    string
	created int64
	info    qsf.Info
	pool    *pool
	handler http.Handler
	metrics metrics
	closed  atomic.Bool
}

// New returns a Server for m with opts. It opens Options.Parallel
// sessions; m must outlive the Server.
func New(m *qsf.Model, opts Options) (*Server, error) {
	if opts.Parallel <= 0 {
		opts.Parallel = 1
	}
	switch {
	case opts.QueueLimit == 0:
		opts.QueueLimit = 4 * opts.Parallel
	case opts.QueueLimit < 0:
		opts.QueueLimit = 0
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 4 << 20
	}
	info := m.Info()
	if opts.MaxTokens <= 0 || opts.MaxTokens > info.ContextLength {
		opts.MaxTokens = info.ContextLength
	}
	if _, err := m.ChatFormat(); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s := &Server{m: m, opts: opts, log: opts.Logger, name: opts.ModelName, created: time.Now().Unix(), info: info}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.name == "" {
		s.name = info.Name
	}
	if s.name == "" {
		s.name = "qsf"
	}
	p, err := newPool(m, opts.Parallel, opts.QueueLimit, !opts.NoBatching)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s.pool = p
	s.metrics.init()

	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
	mux.HandleFunc("POST /v1/completions", s.handleCompletion)
	mux.HandleFunc("POST /v1/embeddings", s.handleEmbeddings)
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("GET /v1/models/{id...}", s.handleModel)
	mux.HandleFunc("POST /tokenize", s.handleTokenize)
	mux.HandleFunc("POST /detokenize", s.handleDetokenize)
	mux.HandleFunc("GET /health", s.handleHealth)
	mux.HandleFunc("GET /metrics", s.handleMetrics)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { s.writeError(w, r, errNotFound(r.URL.Path)) })
	s.handler = s.middleware(mux)
	return s, nil
}

// ServeHTTP answers one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Close refuses new requests (503), waits for the ones being generated to
// give their sessions back and releases the sessions. Call it after
// http.Server.Shutdown; cancel the requests' contexts (the http.Server's
// BaseContext) to make generations stop at their next token. It is safe
// to call more than once.
func (s *Server) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	for range cap(s.pool.free) {
		<-s.pool.free
	}
	s.pool.close()
	return nil
}

// statusWriter records the status a handler answered with.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (Flush,
// SetWriteDeadline).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// middleware checks the API key, caps the body, recovers from panics
// (logged, never shown) and logs and counts every request.
func (s *Server) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.ErrorContext(r.Context(), "panic", "path", r.URL.Path, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				if sw.status == 0 {
					s.writeError(sw, r, errInternal)
				}
			}
			s.metrics.request(r.URL.Path, sw.status)
			s.log.InfoContext(r.Context(), "request", "method", r.Method, "path", r.URL.Path, "status", sw.status,
				"remote", r.RemoteAddr, "elapsed", time.Since(start))
		}()
		if r.URL.Path != "/health" && s.opts.APIKey != "" && !s.authorized(r) {
			s.writeError(sw, r, errUnauthorized)
			return
		}
		if s.closed.Load() && r.URL.Path != "/health" && r.URL.Path != "/metrics" {
			s.writeError(sw, r, errShuttingDown)
			return
		}
		r.Body = http.MaxBytesReader(sw, r.Body, s.opts.MaxBodyBytes)
		next.ServeHTTP(sw, r)
	})
}

// authorized reports whether r carries the API key (compared in constant
// time).
func (s *Server) authorized(r *http.Request) bool {
	const prefix = "Bearer "
	h := r.Header.Get("Authorization")
	if len(h) < len(prefix) || h[:len(prefix)] != prefix {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(h[len(prefix):]), []byte(s.opts.APIKey)) == 1
}

// extendWrite moves the connection's write deadline Options.WriteTimeout
// ahead, when set.
func (s *Server) extendWrite(w http.ResponseWriter) {
	if s.opts.WriteTimeout > 0 {
		http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
	}
}

// liftReadDeadline clears the connection's read deadline once the body
// is read: http.Server.ReadTimeout would otherwise end a long generation
// (the server's check for a closed connection fails at the deadline and
// cancels the request's context).
func (s *Server) liftReadDeadline(w http.ResponseWriter) {
	http.NewResponseController(w).SetReadDeadline(time.Time{})
}

// acquire takes a session for a request whose prompt is prompt.
func (s *Server) acquire(ctx context.Context, prompt []int) (*slot, error) {
	sl, err := s.pool.acquire(ctx, prompt)
	if errors.Is(err, errQueueFull) {
		s.metrics.rejected.Add(1)
	}
	return sl, err
}
