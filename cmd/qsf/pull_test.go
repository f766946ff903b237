package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qsf-llm/qsf/internal/download"
	"github.com/qsf-llm/qsf/internal/testfiles"
)

// hubServer imitates the Hugging Face resolve endpoint on 127.0.0.1: it
// redirects /OWNER/REPO/resolve/main/FILE to /cdn/FILE stating the
// file's sha256 in X-Linked-Etag, and cuts the first cdn response in half.
type hubServer struct {
	data   []byte
	etag   string
	mu     sync.Mutex
	cut    int
	ranges []string
}

func (h *hubServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if name, ok := strings.CutPrefix(r.URL.Path, "/owner/repo/resolve/main/"); ok {
		w.Header().Set("X-Linked-Etag", `"`+h.etag+`"`)
		http.Redirect(w, r, "/cdn/"+name, http.StatusFound)
		return
	}
	if !strings.HasPrefix(r.URL.Path, "/cdn/") {
		http.NotFound(w, r)
		return
	}
	h.mu.Lock()
	h.ranges = append(h.ranges, r.Header.Get("Range"))
	cut := h.cut > 0
	h.cut--
	h.mu.Unlock()
	if cut {
		w.Header().Set("Content-Length", strconv.Itoa(len(h.data)))
		w.Write(h.data[:len(h.data)/2])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(h.data))
}

// TestPull downloads a model from a loopback server as hf://, through a
// cut, then lists it and runs it by name; a wrong checksum is refused.
func TestPull(t *testing.T) {
	data, err := os.ReadFile(testfiles.Path(t, "models", "gguf", "stories260K-Q8_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	hub := &hubServer{data: data, etag: hex.EncodeToString(sum[:]), cut: 1}
	srv := httptest.NewServer(hub) // 127.0.0.1 only
	defer srv.Close()
	models := t.TempDir()
	t.Setenv("HF_ENDPOINT", srv.URL)
	t.Setenv("QSF_MODELS", models)

	// The first attempt is cut and, without retries, keeps the partial file.
	var out, errb bytes.Buffer
	if code := runMain([]string{"pull", "--retries", "0", "hf://owner/repo/stories.gguf"}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "resume") {
		t.Fatalf("cut pull: exit %d, stderr %q", code, errb.String())
	}
	part := download.PartName(filepath.Join(models, "stories.gguf"))
	if st, err := os.Stat(part); err != nil || st.Size() != int64(len(data)/2) {
		t.Fatalf("partial file: %v %v", st, err)
	}
	// The second resumes from the cut and checks the hub's sha256.
	stdout, _ := runOK(t, "pull", "hf://owner/repo/stories.gguf")
	if !strings.Contains(stdout, hub.etag+" verified") {
		t.Errorf("pull: %q, want the verified sha256", stdout)
	}
	if want := "bytes=" + strconv.Itoa(len(data)/2) + "-"; len(hub.ranges) != 2 || hub.ranges[1] != want {
		t.Errorf("requests with Range %q, want the second %q", hub.ranges, want)
	}
	if got, err := os.ReadFile(filepath.Join(models, "stories.gguf")); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("downloaded file differs (%v)", err)
	}
	if _, err := os.Stat(part); !os.IsNotExist(err) {
		t.Errorf("partial file left: %v", err)
	}

	if stdout, _ := runOK(t, "list"); !strings.Contains(stdout, "stories ") || !strings.Contains(stdout, models) {
		t.Errorf("list: %q", stdout)
	}
	if stdout, _ := runOK(t, "run", "-m", "stories", "-p", "Once upon a time", "-n", "4", "--temp", "0", "--threads", "1"); !strings.HasPrefix(stdout, "Once upon a time, there was") {
		t.Errorf("run -m stories: %q", stdout)
	}

	// A wrong checksum is refused and nothing is kept.
	other := t.TempDir()
	out.Reset()
	errb.Reset()
	code := runMain([]string{"pull", "-o", other, "--sha256", strings.Repeat("0", 64), srv.URL + "/cdn/bad.gguf"}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "sha256 mismatch") {
		t.Errorf("wrong checksum: exit %d, stderr %q", code, errb.String())
	}
	if entries, _ := os.ReadDir(other); len(entries) != 0 {
		t.Errorf("%d files left after a checksum mismatch", len(entries))
	}
	// So is a wrong checksum stated by the hub.
	hub.etag = strings.Repeat("1", 64)
	out.Reset()
	errb.Reset()
	if code := runMain([]string{"pull", "-o", other, "hf://owner/repo/stories.gguf"}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "sha256 mismatch") {
		t.Errorf("wrong hub checksum: exit %d, stderr %q", code, errb.String())
	}
	if entries, _ := os.ReadDir(other); len(entries) != 0 {
		t.Errorf("%d files left after a hub checksum mismatch", len(entries))
	}
}
