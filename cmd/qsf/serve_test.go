//go:build unix

package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/internal/testfiles"
	"github.com/qsf-llm/qsf/plan"
)

// TestServeWarnsNonLoopback checks the warning for --host 0.0.0.0 (the
// model path is wrong, so nothing listens).
func TestServeWarnsNonLoopback(t *testing.T) {
	var stderr bytes.Buffer
	code := runMain([]string{"serve", "--host", "0.0.0.0", "-m", t.TempDir() + "/missing.gguf"}, io.Discard, &stderr)
	if code == 0 || !strings.Contains(stderr.String(), "non-loopback") {
		t.Errorf("exit %d, stderr %q: want a failure and a non-loopback warning", code, stderr.String())
	}
	stderr.Reset()
	runMain([]string{"serve", "--host", "127.0.0.1", "-m", t.TempDir() + "/missing.gguf"}, io.Discard, &stderr)
	if strings.Contains(stderr.String(), "non-loopback") {
		t.Errorf("warning for 127.0.0.1: %q", stderr.String())
	}
}

// lockedBuffer is a bytes.Buffer safe for one writer and one reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestServeGracefulShutdown serves on a free loopback port, starts a
// stream, sends SIGTERM to the process and checks that the stream ends
// with [DONE] and the command returns 0.
func TestServeGracefulShutdown(t *testing.T) {
	path := testfiles.Path(t, "models", "synthetic", "synth-qwen2-Q8_0.gguf")
	var stderr lockedBuffer
	exit := make(chan int, 1)
	go func() {
		exit <- runMain([]string{"serve", "-m", path, "--port", "0", "--threads", "1", "--ctx", "256", "--chat-template", "chatml"}, io.Discard, &stderr)
	}()
	addrRE := regexp.MustCompile(`msg=listening addr=(127\.0\.0\.1:\d+)`)
	var addr string
	for deadline := time.Now().Add(60 * time.Second); addr == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := addrRE.FindStringSubmatch(stderr.String()); m != nil {
			addr = m[1]
		}
		select {
		case code := <-exit:
			t.Fatalf("qsf serve exited (%d) before listening: %s", code, stderr.String())
		default:
		}
	}
	if addr == "" {
		t.Fatalf("qsf serve did not listen: %s", stderr.String())
	}
	resp, err := http.Post("http://"+addr+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt":"Once","max_tokens":200,"temperature":0,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(br)
	if err != nil || !bytes.HasSuffix(rest, []byte("data: [DONE]\n\n")) {
		t.Errorf("stream after SIGTERM: %v, ends %q", err, rest[max(0, len(rest)-40):])
	}
	select {
	case code := <-exit:
		if code != 0 {
			t.Errorf("exit status %d, want 0: %s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("qsf serve did not exit 30 s after SIGTERM")
	}
	if !strings.Contains(stderr.String(), "msg=stopped") {
		t.Errorf("no stop record: %s", stderr.String())
	}
	if !regexp.MustCompile(`msg=listening .* kv=f16`).MatchString(stderr.String()) {
		t.Errorf("the listening record does not give llama-server's f16 KV cache: %s", stderr.String())
	}
}

// TestServeKVDefault checks the KV type qsf serve picks when --kv-type is
// not given: f16 without a budget and under a budget that holds an f32
// cache, the plan's lower choice under a tighter one.
func TestServeKVDefault(t *testing.T) {
	path := testfiles.Path(t, "models", "synthetic", "synth-qwen2-Q8_0.gguf")
	cfg := qsf.Config{Threads: 1, ContextLength: 256}
	if got := kvDefault(path, cfg, "f16"); got != "f16" {
		t.Errorf("no budget: %q, want f16", got)
	}
	cfg.RAMBudget = 1 << 40
	if got := kvDefault(path, cfg, "f16"); got != "f16" {
		t.Errorf("a budget that holds everything: %q, want f16", got)
	}
	// The smallest budget that works makes the plan give up KV precision
	// (a q4 cache): kvDefault leaves that to the plan.
	cfg.RAMBudget = 1
	var be *plan.BudgetError
	if _, err := qsf.PlanFile(path, cfg); !errors.As(err, &be) {
		t.Fatalf("plan with a 1-byte budget: %v, want a BudgetError", err)
	}
	cfg.RAMBudget = be.Min
	p, err := qsf.PlanFile(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := kvDefault(path, cfg, "f16"); p.KVType == "f32" || got != "" {
		t.Errorf("the smallest budget (plan kv %s): %q, want the plan's choice", p.KVType, got)
	}
}

// TestServeLoadingHandler checks the answers while the model loads.
func TestServeLoadingHandler(t *testing.T) {
	for path, want := range map[string]string{"/health": `"loading"`, "/v1/models": `"code":"loading"`} {
		w := httptest.NewRecorder()
		loadingHandler(w, httptest.NewRequest("GET", path, nil))
		if w.Code != 503 || w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), want) {
			t.Errorf("%s: %d %q", path, w.Code, w.Body.String())
		}
	}
}
