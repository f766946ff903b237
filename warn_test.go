package qsf_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/internal/testfiles"
)

// TestLoadWarnings checks that Load logs one warning through
// Config.Logger for each value it changes or doubts, and none otherwise.
func TestLoadWarnings(t *testing.T) {
	cases := []struct {
		name string
		cfg  qsf.Config
		want string // "" for no warning
	}{
		{"plain", qsf.Config{Threads: 1, ContextLength: 64}, ""},
		{"threads", qsf.Config{Threads: runtime.NumCPU() + 1, ContextLength: 64}, "threads asked"},
		{"ctx", qsf.Config{Threads: 1, ContextLength: 1000}, "longer than the 128 tokens the model was trained on"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			tc.cfg.Logger = slog.New(slog.NewTextHandler(&buf, nil))
			loadStories(t, tc.cfg)
			lines := strings.Count(buf.String(), "\n")
			switch {
			case tc.want == "" && lines != 0:
				t.Errorf("logged %q, want nothing", buf.String())
			case tc.want != "" && (lines != 1 || !strings.Contains(buf.String(), "level=WARN") || !strings.Contains(buf.String(), tc.want)):
				t.Errorf("logged %q, want one warning with %q", buf.String(), tc.want)
			}
		})
	}
}

// TestSamplingValidation checks that Generate refuses what
// SamplerOptions.Validate refuses, and that Sample of no logits is -1.
func TestSamplingValidation(t *testing.T) {
	bad := []qsf.SamplerOptions{{TopP: 7}, {TopK: -5}, {MinP: 3}, {MinP: -0.1}, {RepeatPenalty: -1}, {RepeatLastN: -2}, {Temperature: float32(math.NaN())}}
	good := []qsf.SamplerOptions{{}, {Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05}, {TopP: 1, MinP: 1}, {Temperature: -1}, {FrequencyPenalty: -0.5, RepeatLastN: -1}}
	m := loadStories(t, qsf.Config{Threads: 1})
	s, err := m.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, o := range bad {
		if err := o.Validate(); !errors.Is(err, qsf.ErrInvalidOption) {
			t.Errorf("Validate(%+v) = %v, want ErrInvalidOption", o, err)
		}
		called := false
		_, err := s.Generate(context.Background(), "Once", qsf.GenerateOptions{MaxTokens: 2, Sampling: o}, func(qsf.Token) error { called = true; return nil })
		if !errors.Is(err, qsf.ErrInvalidOption) || called || s.Pos() != 0 {
			t.Errorf("Generate with %+v: %v (callback %v, pos %d), want ErrInvalidOption before any work", o, err, called, s.Pos())
		}
	}
	for _, o := range good {
		if err := o.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v, want nil", o, err)
		}
	}
	if id := qsf.Sample(nil, qsf.SamplerOptions{}); id != -1 {
		t.Errorf("Sample(nil) = %d, want -1", id)
	}
	if id := qsf.Sample([]float32{0, 3, 1}, qsf.SamplerOptions{}); id != 1 {
		t.Errorf("Sample = %d, want 1", id)
	}
}

// TestLoadProgress checks that Load reports the repacking of a Q8_0 model
// up to its total, and nothing with NoRepack.
func TestLoadProgress(t *testing.T) {
	path := testfiles.Path(t, "models", "gguf", "stories260K-Q8_0.gguf")
	for _, noRepack := range []bool{false, true} {
		var calls int
		var last, total int64
		m, err := qsf.Load(path, qsf.Config{Threads: 1, NoRepack: noRepack, LoadProgress: func(done, tot int64) {
			if done < last || (total != 0 && tot != total) || done > tot {
				t.Errorf("progress %d/%d after %d/%d", done, tot, last, total)
			}
			calls++
			last, total = done, tot
		}})
		if err != nil {
			t.Fatal(err)
		}
		m.Close()
		if noRepack && calls != 0 {
			t.Errorf("NoRepack: %d progress calls, want 0", calls)
		}
		if !noRepack && (calls == 0 || last != total || total == 0) {
			t.Errorf("%d calls, last %d of %d: want the total reached", calls, last, total)
		}
	}
}
