package stream

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestReadUnit checks that a unit read in two halves in parallel (the I/O
// goroutine and the read helper) lands every span at its buffer offset.
func TestReadUnit(t *testing.T) {
	file := make([]byte, 1<<16)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range file {
		file[i] = byte(rng.Uint32())
	}
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		minSplit int
		spans    []span
	}{
		{"one span, whole", 1 << 20, []span{{off: 100, size: 5000}}},
		{"one span, split", 1024, []span{{off: 100, size: 20000}}},
		{"spans, split inside one", 1024, []span{{off: 7, size: 3000, bufOff: 0}, {off: 9000, size: 12000, bufOff: 3008}, {off: 30000, size: 777, bufOff: 15040}}},
		{"split on a span boundary", 1024, []span{{off: 0, size: 8192}, {off: 40000, size: 8192, bufOff: 8192}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			s := &Source{file: f, fd: int(f.Fd()), minSplit: tc.minSplit, jobs: make(chan readJob, 1), jobDone: make(chan error, 1)}
			s.wg.Add(1)
			go s.helper()
			defer func() { close(s.jobs); s.wg.Wait(); f.Close() }()
			end, total := 0, 0
			for _, sp := range tc.spans {
				end = max(end, sp.bufOff+sp.size)
				total += sp.size
			}
			if runtime.GOOS == "linux" && !s.cached(tc.spans, total) {
				t.Error("a page just written is not reported cached: units would never be split")
			}
			dst := make([]byte, end)
			if err := s.readUnit(dst, tc.spans); err != nil {
				t.Fatal(err)
			}
			for i, sp := range tc.spans {
				if !bytes.Equal(dst[sp.bufOff:sp.bufOff+sp.size], file[sp.off:sp.off+int64(sp.size)]) {
					t.Errorf("span %d differs", i)
				}
			}
			if got := s.bytesRead.Load(); got != int64(total) {
				t.Errorf("read %d bytes, want %d", got, total)
			}
			if n := testing.AllocsPerRun(10, func() { s.readUnit(dst, tc.spans) }); n != 0 {
				t.Errorf("readUnit allocates %v times", n)
			}
		})
	}
}
