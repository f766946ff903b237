package main

import (
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/qsf-llm/qsf"
)

func TestBenchJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	var out, errb bytes.Buffer
	if code := runMain([]string{"synth", "--shape", "tiny", "--type", "q8_0", "-o", path}, &out, &errb); code != 0 {
		t.Fatalf("synth: exit %d: %s", code, errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := runMain([]string{"bench", "-m", path, "-p", "16", "-n", "8", "-r", "2", "-t", "2", "--json"}, &out, &errb); code != 0 {
		t.Fatalf("bench: exit %d: %s", code, errb.String())
	}
	var raw map[string]any
	if err := json.Unmarshal(out.Bytes(), &raw); err != nil {
		t.Fatalf("bench --json output %q: %v", out.String(), err)
	}
	for _, key := range []string{"prefill_tok_s", "decode_tok_s", "decode_gb_s", "weight_bytes_per_token",
		"threads", "kernel", "prefill_tok_s_runs", "decode_tok_s_runs"} {
		if _, ok := raw[key]; !ok {
			t.Errorf("bench --json has no %q: %s", key, out.String())
		}
	}
	var r benchResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if r.PrefillTokS <= 0 || r.DecodeTokS <= 0 || r.DecodeGBs <= 0 {
		t.Errorf("rates not positive: %+v", r)
	}
	if len(r.PrefillRuns) != 2 || len(r.DecodeRuns) != 2 {
		t.Errorf("runs %v %v, want 2 each", r.PrefillRuns, r.DecodeRuns)
	}
	if r.PrefillTokSMin > r.PrefillTokS || r.PrefillTokS > r.PrefillTokSMax {
		t.Errorf("prefill median %v outside [%v, %v]", r.PrefillTokS, r.PrefillTokSMin, r.PrefillTokSMax)
	}
	if r.Threads != 2 || r.Kernel == "" {
		t.Errorf("threads %d kernel %q", r.Threads, r.Kernel)
	}
	// The tiny shape: 2 layers of 256-wide Q8_0 weights, an output head
	// of 1024×256 and one embedding row; norms F32.
	const q8 = 34.0 / 32
	want := int64((2*(256*256*2+256*128*2+256*512*3)+1024*256+256)*q8) + (2*2+1)*256*4
	if r.WeightBytesPerToken != want {
		t.Errorf("weight bytes per token %d, want %d", r.WeightBytesPerToken, want)
	}
}

func TestBenchUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := runMain([]string{"bench"}, &out, &errb); code != 2 {
		t.Errorf("bench without -m: exit %d, want 2", code)
	}
	if code := runMain([]string{"bench", "-m", "x.gguf", "-r", "0"}, &out, &errb); code != 2 {
		t.Errorf("bench -r 0: exit %d, want 2", code)
	}
}

func TestMemBW(t *testing.T) {
	bw := measureMemBW(16<<20, 2, 1)
	if bw.OneThreadGB <= 0 || bw.NThreadsGB <= 0 || bw.Bytes != 16<<20 {
		t.Errorf("measureMemBW: %+v", bw)
	}
}

func TestSummarize(t *testing.T) {
	for _, tt := range []struct {
		in          []float64
		med, lo, hi float64
	}{
		{[]float64{3, 1, 2}, 2, 1, 3},
		{[]float64{4, 1, 2, 3}, 2.5, 1, 4},
		{[]float64{5}, 5, 5, 5},
		{nil, 0, 0, 0},
	} {
		med, lo, hi := summarize(tt.in)
		if med != tt.med || lo != tt.lo || hi != tt.hi {
			t.Errorf("summarize(%v) = %v %v %v, want %v %v %v", tt.in, med, lo, hi, tt.med, tt.lo, tt.hi)
		}
	}
}

// TestBenchStreaming checks the streaming report of a model benchmarked
// under a RAM budget below its resident peak: the decode steps read what
// the plan says per token, and the bound is reported.
func TestBenchStreaming(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	var out, errb bytes.Buffer
	if code := runMain([]string{"synth", "--shape", "tiny", "--type", "q8_0", "-o", path}, &out, &errb); code != 0 {
		t.Fatalf("synth: exit %d: %s", code, errb.String())
	}
	out.Reset()
	// One byte below the resident peak: the plan streams. One buffer, so
	// that the two layers are read again for every token.
	p, err := qsf.PlanFile(path, qsf.Config{ContextLength: 16, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	budget := strconv.FormatInt(p.PeakBytes-1, 10)
	if code := runMain([]string{"bench", "-m", path, "-p", "8", "-n", "8", "-r", "1", "-t", "1", "--ram-budget", budget, "--no-prefetch", "--json"}, &out, &errb); code != 0 {
		t.Fatalf("bench: exit %d: %s", code, errb.String())
	}
	var r benchResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	sr := r.Streaming
	if sr == nil {
		t.Fatalf("no streaming report: %s", out.String())
	}
	// The reader works ahead of the forward pass, so the pieces read in
	// the timed window may be off by one at either end: within 2% over
	// 8 tokens.
	if plan := float64(sr.PlanBytesPerToken); plan <= 0 || math.Abs(sr.ReadBytesPerToken-plan) > plan/50 {
		t.Errorf("read %v bytes per token, planned %d", sr.ReadBytesPerToken, sr.PlanBytesPerToken)
	}
	if sr.ComputeMsPerToken <= 0 || sr.BoundTokS <= 0 || sr.BoundFraction <= 0 {
		t.Errorf("compute %v ms/token, bound %v tok/s (%v)", sr.ComputeMsPerToken, sr.BoundTokS, sr.BoundFraction)
	}
}
