package format

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// locateTestdata returns the shared test data directory: $QSF_TESTDATA, or
// ../shared next to the module root.
func locateTestdata() (string, error) {
	dir := os.Getenv("QSF_TESTDATA")
	if dir == "" {
		root, err := os.Getwd()
		if err != nil {
			return "", err
		}
		for {
			if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
				break
			}
			parent := filepath.Dir(root)
			if parent == root {
				return "", errors.New("no go.mod above the package directory")
			}
			root = parent
		}
		dir = filepath.Join(root, "..", "shared")
	}
	if _, err := os.Stat(filepath.Join(dir, "models")); err != nil {
		return "", err
	}
	return dir, nil
}

// testdataDir returns the shared test data directory, skipping the test
// when it is absent.
func testdataDir(t testing.TB) string {
	t.Helper()
	dir, err := locateTestdata()
	if err != nil {
		t.Skipf("test data not found (set QSF_TESTDATA to the shared directory): %v", err)
	}
	return dir
}

// expectation is what the test data documentation says about one GGUF.
type expectation struct {
	version, tensors, kv int // -1 when not documented
	arch                 string
	types                map[string]int // tensor type histogram, nil when not documented
}

var (
	manifestRow  = regexp.MustCompile(`^\| ((?:gguf|vocab)/[^ |]+\.gguf) \| \d+ \| [^|]+ \| GGUF v(\d+), (\d+) tensors, (\d+) kv \| ([^ |]+) \|`)
	syntheticRow = regexp.MustCompile(`^\| (synth-[^ |]+\.gguf) \| \d+ \| [0-9a-f]+ \| ([^|]+) \|`)
)

// expectations reads models/MANIFEST.md and models/synthetic/README.md,
// keyed by path relative to models/.
func expectations(t *testing.T, dir string) map[string]expectation {
	t.Helper()
	exp := map[string]expectation{}
	scan := func(path string, f func(line string)) {
		fh, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		s := bufio.NewScanner(fh)
		s.Buffer(nil, 1<<20)
		for s.Scan() {
			f(s.Text())
		}
	}
	scan(filepath.Join(dir, "models", "MANIFEST.md"), func(line string) {
		if m := manifestRow.FindStringSubmatch(line); m != nil {
			v, _ := strconv.Atoi(m[2])
			nt, _ := strconv.Atoi(m[3])
			kv, _ := strconv.Atoi(m[4])
			exp[m[1]] = expectation{version: v, tensors: nt, kv: kv, arch: m[5]}
		}
	})
	scan(filepath.Join(dir, "models", "synthetic", "README.md"), func(line string) {
		m := syntheticRow.FindStringSubmatch(line)
		if m == nil {
			return
		}
		e := expectation{version: -1, kv: -1, types: map[string]int{}}
		e.arch = strings.Split(strings.TrimPrefix(m[1], "synth-"), "-")[0]
		for _, f := range strings.Fields(m[2]) {
			name, n, _ := strings.Cut(f, ":")
			k, _ := strconv.Atoi(n)
			e.types[name] += k
			e.tensors += k
		}
		exp["synthetic/"+m[1]] = e
	})
	return exp
}
