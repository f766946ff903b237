package server_test

import (
	"log"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/server"
)

// ExampleNew mounts the OpenAI API of a model under /llm/ of an
// application's own mux, on the loopback address.
func ExampleNew() {
	m, err := qsf.Load("model.gguf", qsf.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	api, err := server.New(m, server.Options{APIKey: os.Getenv("LLM_KEY"), Parallel: 2,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		log.Fatal(err)
	}
	defer api.Close()
	mux := http.NewServeMux()
	mux.Handle("/llm/", http.StripPrefix("/llm", api))
	srv := &http.Server{Addr: "127.0.0.1:8080", Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.ListenAndServe())
}
