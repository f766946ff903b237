package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/server"
)

func cmdServe(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", "-m FILE [--host 127.0.0.1] [--port 8080] [--api-key KEY] [--parallel N] [flags]", stderr)
	// The KV cache is f16 unless told otherwise, as llama-server's: half
	// the bytes a batched step's attention reads.
	mf := modelFlags{kvDefault: "f16"}
	mf.register(fs)
	host := fs.String("host", "127.0.0.1", "address to listen on (another than loopback exposes the model to the network: set --api-key)")
	port := fs.Int("port", 8080, "port to listen on (0 = any free port)")
	apiKey := fs.String("api-key", "", "require Authorization: Bearer KEY on every route but /health")
	parallel := fs.Int("parallel", 1, "sessions serving requests concurrently (each holds a KV cache of --ctx positions; --ram-budget counts them all, and they share one layer reader when streaming)")
	queue := fs.Int("queue", 0, "most requests waiting for a free session, more get 429 (0 = 4 × --parallel, -1 = none wait)")
	noBatch := fs.Bool("no-batch", false, "decode the --parallel sessions one after another instead of together (continuous batching)")
	maxTokens := fs.Int("max-tokens", 0, "cap on max_tokens, and its default (0 = the context length)")
	maxBody := fs.Int64("max-body", 4<<20, "largest request body in bytes (413 beyond it)")
	name := fs.String("name", "", "model id in /v1/models and answers (default: the file's general.name, or qsf)")
	tmpl := fs.String("chat-template", "", "chat format: a built-in name (chatml, llama3, ...) or a file holding a template (default: the model's)")
	grace := fs.Duration("shutdown-timeout", 10*time.Second, "on SIGINT/SIGTERM, how long requests in flight may finish before they are cancelled")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if *port < 0 || *port > 65535 {
		return usagef("--port %d: want 0 to 65535", *port)
	}
	level, err := parseLevel(mf.logLevel)
	if err != nil {
		return err
	}
	explicit := false
	fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "log-level" })
	if !explicit {
		level = slog.LevelInfo // a server logs its requests unless told otherwise
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	addr := net.JoinHostPort(*host, strconv.Itoa(*port))
	if ip := net.ParseIP(*host); *host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		log.Warn("listening on a non-loopback address: the model is reachable from the network", "addr", addr, "api_key", *apiKey != "")
	}
	if mf.path != "" {
		if _, err := os.Stat(mf.path); err != nil {
			return err
		}
	}
	ctx, stop := interruptContext()
	defer stop()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	// Listen first and answer "loading" until the model is ready, so a
	// supervisor can tell a loading server from a dead one.
	var handler atomic.Pointer[http.Handler]
	handler.Store(ptr(http.Handler(http.HandlerFunc(loadingHandler))))
	base, cancelBase := context.WithCancel(context.Background())
	defer cancelBase()
	hs := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*handler.Load()).ServeHTTP(w, r) }),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute, // the request; generation handlers lift it once the body is read
		WriteTimeout:      time.Minute, // moved forward before each write of an answer (server.Options.WriteTimeout)
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	log.Info("loading", "addr", ln.Addr().String(), "model", mf.path)
	mf.sessions = *parallel
	m, srv, err := newServer(&mf, *tmpl, server.Options{ModelName: *name, APIKey: *apiKey, Parallel: *parallel, QueueLimit: *queue,
		MaxBodyBytes: *maxBody, MaxTokens: *maxTokens, NoBatching: *noBatch, WriteTimeout: time.Minute, Logger: log})
	if err != nil {
		hs.Close()
		return err
	}
	defer m.Close()
	defer srv.Close()
	handler.Store(ptr(http.Handler(srv)))
	info := m.Info()
	log.Info("listening", "addr", ln.Addr().String(), "model", mf.path, "parallel", *parallel, "context", info.ContextLength, "kv", m.Plan().KVType)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: finishing requests in flight", "timeout", *grace)
	sctx, cancel := context.WithTimeout(context.Background(), *grace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		log.Warn("requests still in flight after the timeout: cancelling them")
		cancelBase()
		hs.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	srv.Close()
	log.Info("stopped")
	return nil
}

// newServer loads the model and opens the server's sessions.
func newServer(mf *modelFlags, tmpl string, opts server.Options) (*qsf.Model, *server.Server, error) {
	m, err := loadChatModel(mf, tmpl)
	if err != nil {
		return nil, nil, err
	}
	srv, err := server.New(m, opts)
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	return m, srv, nil
}

// loadingHandler answers while the model loads: /health with 503
// {"status":"loading"}, every other route with a 503 error object; both
// with Retry-After.
func loadingHandler(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", "5")
	w.WriteHeader(http.StatusServiceUnavailable)
	if r.URL.Path == "/health" {
		io.WriteString(w, `{"status":"loading"}`+"\n")
		return
	}
	io.WriteString(w, `{"error":{"message":"the model is loading","type":"server_error","code":"loading"}}`+"\n")
}

func ptr[T any](v T) *T { return &v }
