package download

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// server serves data at /file on 127.0.0.1 (with Range support unless
// noRange), cutting the connection halfway through the first cut
// responses, and redirects /redirect to /file stating etag.
type server struct {
	data    []byte
	cut     int
	noRange bool
	etag    string

	mu     sync.Mutex
	ranges []string
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/redirect":
		w.Header().Set("X-Linked-Etag", `"`+s.etag+`"`)
		http.Redirect(w, r, "/file", http.StatusFound)
		return
	case "/file":
	default:
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	s.ranges = append(s.ranges, r.Header.Get("Range"))
	cut := s.cut > 0
	if cut {
		s.cut--
	}
	s.mu.Unlock()
	if s.noRange {
		r.Header.Del("Range")
	}
	if cut {
		w.Header().Set("Content-Length", strconv.Itoa(len(s.data)))
		w.Write(s.data[:len(s.data)/2])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the connection drops mid-body
	}
	http.ServeContent(w, r, "file", time.Time{}, bytes.NewReader(s.data))
}

func newServer(t *testing.T, s *server) string {
	s.data = make([]byte, 3<<20+17)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range s.data {
		s.data[i] = byte(rng.Uint32())
	}
	srv := httptest.NewServer(s) // listens on 127.0.0.1
	t.Cleanup(srv.Close)
	return srv.URL
}

func sum(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }

func checkFile(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: %d bytes, not the served %d", path, len(got), len(want))
	}
	if _, err := os.Stat(PartName(path)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("partial file left: %v", err)
	}
}

func TestResumeAfterCut(t *testing.T) {
	s := &server{cut: 1}
	url := newServer(t, s)
	path := filepath.Join(t.TempDir(), "m.gguf")
	// Without retries the cut leaves half the file as the partial file.
	if _, err := File(context.Background(), url+"/file", path, Options{}); err == nil {
		t.Fatal("a cut transfer succeeded")
	}
	st, err := os.Stat(PartName(path))
	if err != nil || st.Size() != int64(len(s.data)/2) {
		t.Fatalf("partial file after the cut: %v, %v", st, err)
	}
	// The next call continues from there.
	res, err := File(context.Background(), url+"/file", path, Options{SHA256: sum(s.data)})
	if err != nil {
		t.Fatal(err)
	}
	checkFile(t, path, s.data)
	if !res.Resumed || !res.Verified || res.Size != int64(len(s.data)) {
		t.Errorf("result %+v", res)
	}
	if want := "bytes=" + strconv.Itoa(len(s.data)/2) + "-"; len(s.ranges) != 2 || s.ranges[1] != want {
		t.Errorf("Range headers %q, want the second %q", s.ranges, want)
	}
}

func TestRetryAfterCut(t *testing.T) {
	s := &server{cut: 2}
	url := newServer(t, s)
	path := filepath.Join(t.TempDir(), "m.gguf")
	var last int64
	res, err := File(context.Background(), url+"/file", path, Options{Retries: 2, Progress: func(done, total int64) { last = done }})
	if err != nil {
		t.Fatal(err)
	}
	checkFile(t, path, s.data)
	if !res.Resumed || res.Verified || last != int64(len(s.data)) || len(s.ranges) != 3 {
		t.Errorf("result %+v, progress %d, %d requests", res, last, len(s.ranges))
	}
}

func TestNoRangeSupportRestarts(t *testing.T) {
	s := &server{noRange: true}
	url := newServer(t, s)
	path := filepath.Join(t.TempDir(), "m.gguf")
	os.WriteFile(PartName(path), []byte("stale bytes"), 0o644)
	if _, err := File(context.Background(), url+"/file", path, Options{}); err != nil {
		t.Fatal(err)
	}
	checkFile(t, path, s.data)
}

func TestChecksum(t *testing.T) {
	for _, tc := range []struct {
		name, flag, etag string
		ok               bool
	}{
		{"etag right", "", "", true},
		{"etag wrong", "", "0000000000000000000000000000000000000000000000000000000000000000", false},
		{"flag wrong", "1111111111111111111111111111111111111111111111111111111111111111", "", false},
		{"flag over etag", "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &server{}
			url := newServer(t, s)
			s.etag = tc.etag
			if tc.etag == "" {
				s.etag = sum(s.data)
			}
			if tc.name == "flag over etag" {
				tc.flag, s.etag = sum(s.data), "2222222222222222222222222222222222222222222222222222222222222222"
			}
			path := filepath.Join(t.TempDir(), "m.gguf")
			res, err := File(context.Background(), url+"/redirect", path, Options{SHA256: tc.flag})
			if tc.ok {
				if err != nil || !res.Verified {
					t.Fatalf("%v, %+v", err, res)
				}
				checkFile(t, path, s.data)
				return
			}
			if !errors.Is(err, ErrChecksum) {
				t.Fatalf("err %v, want ErrChecksum", err)
			}
			if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 0 {
				t.Errorf("%d files left after a checksum mismatch", len(entries))
			}
		})
	}
}

func TestHTTPError(t *testing.T) {
	s := &server{}
	url := newServer(t, s)
	path := filepath.Join(t.TempDir(), "m.gguf")
	if _, err := File(context.Background(), url+"/missing", path, Options{Retries: 3}); !errors.Is(err, errPermanent) {
		t.Errorf("404: %v", err)
	}
}

func TestAlreadyComplete(t *testing.T) {
	s := &server{}
	url := newServer(t, s)
	path := filepath.Join(t.TempDir(), "m.gguf")
	os.WriteFile(PartName(path), s.data, 0o644)
	if _, err := File(context.Background(), url+"/file", path, Options{SHA256: sum(s.data)}); err != nil {
		t.Fatal(err)
	}
	checkFile(t, path, s.data)
}
