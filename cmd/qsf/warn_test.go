package main

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/internal/testfiles"
)

// TestWarnings checks that every change QSF makes to what the user asked
// for prints exactly one warning line, and that invalid values are refused
// before anything is printed on stdout.
func TestWarnings(t *testing.T) {
	model := filepath.Join(testfiles.Dir(t), "models", "gguf", "stories260K-f32.gguf")
	budget := degradingBudget(t, model)
	cases := []struct {
		name   string
		args   []string
		code   int
		stderr string // the one line expected (substring)
		stdout bool   // whether stdout may have text
	}{
		{"threads", []string{"--threads", "1000"}, 0, "warning: 1000 threads asked", true},
		{"ctx above trained", []string{"--ctx", "100000"}, 0, "warning: context 100000 is longer than the 128 tokens the model was trained on", true},
		{"context full", []string{"--ctx", "8", "-n", "0"}, 0, "warning: the context of 8 tokens is full", true},
		{"budget", []string{"--ram-budget", budget}, 0, "warning: to fit the RAM budget", true},
		{"prompt longer than ctx", []string{"--ctx", "3"}, 2, "the prompt is 5 tokens, longer than the context of 3", false},
		{"top-p", []string{"--top-p", "7"}, 2, "top-p 7 is outside [0, 1]", false},
		{"top-k", []string{"--top-k", "-5"}, 2, "top-k -5 is negative", false},
		{"min-p", []string{"--min-p", "3"}, 2, "min-p 3 is outside [0, 1]", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			args := append([]string{"run", "-m", model, "-p", "Once upon a time", "-n", "4", "--temp", "0"}, tc.args...)
			if code := runMain(args, &out, &errb); code != tc.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.code, errb.String())
			}
			if n := strings.Count(errb.String(), tc.stderr); n != 1 {
				t.Errorf("stderr has %q %d times, want once:\n%s", tc.stderr, n, errb.String())
			}
			if lines := strings.Count(strings.TrimSpace(errb.String()), "\n") + 1; lines != 1 {
				t.Errorf("stderr has %d lines, want 1:\n%s", lines, errb.String())
			}
			if !tc.stdout && out.Len() > 0 {
				t.Errorf("refused, yet printed %q", out.String())
			}
		})
	}
	t.Run("no warning", func(t *testing.T) {
		var out, errb bytes.Buffer
		if code := runMain([]string{"run", "-m", model, "-p", "Once upon a time", "-n", "4", "--threads", "1"}, &out, &errb); code != 0 || errb.Len() > 0 {
			t.Errorf("exit %d, stderr %q; want 0 and nothing", code, errb.String())
		}
	})
}

// degradingBudget returns a --ram-budget value under which the plan of
// model lowers the KV cache type.
func degradingBudget(t *testing.T, model string) string {
	_, err := qsf.PlanFile(model, qsf.Config{RAMBudget: 1})
	if !errors.Is(err, qsf.ErrBudget) {
		t.Fatalf("plan under 1 byte: %v, want ErrBudget", err)
	}
	for b := int64(4 << 20); b < 64<<20; b += 16 << 10 {
		p, err := qsf.PlanFile(model, qsf.Config{RAMBudget: b})
		if err == nil && p.KVType != "f32" {
			return fmt.Sprint(b)
		}
	}
	t.Fatal("no budget lowers the KV cache type")
	return ""
}

func TestLogLevel(t *testing.T) {
	model := filepath.Join(testfiles.Dir(t), "models", "gguf", "stories260K-f32.gguf")
	common := []string{"run", "-m", model, "-p", "Once", "-n", "1", "--threads", "1000"}
	for _, tc := range []struct {
		level string
		code  int
		want  string // in stderr; "" for nothing
	}{
		{"error", 0, ""},
		{"warn", 0, "qsf: warning: 1000 threads asked"},
		{"debug", 0, "qsf: debug: loaded path="},
		{"loud", 2, "--log-level"},
	} {
		var out, errb bytes.Buffer
		code := runMain(append(common, "--log-level", tc.level), &out, &errb)
		if code != tc.code || (tc.want == "") != (errb.Len() == 0) || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("--log-level %s: exit %d, stderr %q; want exit %d and %q", tc.level, code, errb.String(), tc.code, tc.want)
		}
	}
}
