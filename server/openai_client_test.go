package server_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/server"
)

// TestOpenAINodeClient runs the official openai npm package (installed
// by "npm ci" in testdata/npmclient; .ci/run does it) against the server
// on 127.0.0.1: models, chat, streaming chat, completions, embeddings and
// two errors. It skips when node or the package is missing.
func TestOpenAINodeClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	dir, _ := filepath.Abs(filepath.Join("testdata", "npmclient"))
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai", "package.json")); err != nil {
		t.Skip("the openai npm package is not installed: run npm ci in server/testdata/npmclient")
	}
	m := loadModel(t)
	_, ts := newServer(t, m, server.Options{ModelName: "synth", APIKey: "test-key", Parallel: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "client.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "QSF_BASE_URL="+ts.URL+"/v1", "QSF_API_KEY=test-key", "QSF_MODEL=synth",
		"NO_PROXY=127.0.0.1", "HTTP_PROXY=", "HTTPS_PROXY=", "http_proxy=", "https_proxy=")
	raw, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("node client: %v\n%s", err, stderr)
	}
	var got struct {
		Models []string
		Chat   struct {
			Content, Finish string
			Usage           struct{ Prompt_tokens, Completion_tokens int }
		}
		Stream struct {
			Content, Finish string
			Chunks          int
			Usage           *struct{ Completion_tokens int }
		}
		Completion    struct{ Text, Finish string }
		Embeddings    []int
		EmbeddingNorm float64
		BadKey        any
		BadModel      any
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("node output %q: %v", raw, err)
	}
	t.Logf("node client: %s", raw)

	s, _ := m.NewSession()
	defer s.Close()
	want, err := s.Chat(ctx, []qsf.Message{{Role: "user", Content: "Hello from node"}}, qsf.GenerateOptions{MaxTokens: 12}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Reset()
	wantComp, err := s.Complete(ctx, "Once upon a time", qsf.GenerateOptions{MaxTokens: 10}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Models) != 1 || got.Models[0] != "synth" {
		t.Errorf("models %v", got.Models)
	}
	if got.Chat.Content != want.Text || got.Chat.Usage.Completion_tokens != len(want.Tokens) {
		t.Errorf("chat %q (%d tokens), want %q (%d)", got.Chat.Content, got.Chat.Usage.Completion_tokens, want.Text, len(want.Tokens))
	}
	if got.Stream.Content != want.Text || got.Stream.Finish != got.Chat.Finish || got.Stream.Usage == nil || got.Stream.Chunks < 2 {
		t.Errorf("stream %+v, want %q", got.Stream, want.Text)
	}
	if got.Completion.Text != wantComp.Text || got.Completion.Finish != "length" {
		t.Errorf("completion %+v, want %q", got.Completion, wantComp.Text)
	}
	if len(got.Embeddings) != 2 || got.Embeddings[0] != m.Info().Embedding || got.EmbeddingNorm < 0.999 || got.EmbeddingNorm > 1.001 {
		t.Errorf("embeddings %v norm %v, want 2 of %d, unit length", got.Embeddings, got.EmbeddingNorm, m.Info().Embedding)
	}
	if got.BadKey != 401.0 || got.BadModel != 404.0 {
		t.Errorf("errors: wrong key %v, unknown model %v; want 401, 404", got.BadKey, got.BadModel)
	}
}
