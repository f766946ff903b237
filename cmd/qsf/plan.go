package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/qsf-llm/qsf"
)

func cmdPlan(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("plan", "-m FILE --ram-budget N [--ctx N] [--json]", stderr)
	var mf modelFlags
	mf.register(fs)
	asJSON := fs.Bool("json", false, "print one JSON object")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if mf.path == "" {
		return usagef("no model: pass -m FILE")
	}
	cfg, err := mf.config()
	if err != nil {
		return err
	}
	p, err := qsf.PlanFile(resolveModel(mf.path), cfg)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(p)
	}
	p.Print(stdout)
	return nil
}

// printIO reports a session's memory and file reads: peak RSS, bytes read
// per token, I/O wait against compute time and the bound the mode allows.
func printIO(w io.Writer, m *qsf.Model, s *qsf.Session, tokens int) {
	fmt.Fprintf(w, "peak RSS (VmHWM): %.1f MiB", float64(peakRSS())/(1<<20))
	if p := m.Plan(); p != nil {
		fmt.Fprintf(w, ", planned %.1f MiB", float64(p.PeakBytes)/(1<<20))
	}
	fmt.Fprintln(w)
	if m.ExpertStreaming() {
		st := s.Stats()
		printExperts(w, m.Plan().ExpertSlots, m.Plan().ExpertsTotal, s.ExpertStats(), tokens, st.PrefillTime+st.DecodeTime)
	}
	if !m.Streaming() || tokens == 0 {
		return
	}
	io := s.IOStats()
	st := s.Stats()
	total := st.PrefillTime + st.DecodeTime
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(tokens) }
	p := m.Plan()
	fmt.Fprintf(w, "streaming: ring %.1f MiB (%.2f layers); %.1f MiB read per token (%d pieces, %d started on demand), I/O %.2f ms/token, waited %.2f ms/token (%d stalls), compute %.2f ms/token\n",
		float64(p.RingBytes)/(1<<20), p.RingLayers, float64(io.BytesRead)/float64(tokens)/(1<<20), io.Reads, io.Misses,
		per(io.IOTime), per(io.Wait), io.Stalls, per(total-io.Wait))
	if io.IOTime > 0 {
		// The bound is the read bandwidth over the bytes a token
		// reads; a pipeline that overlaps reads with compute cannot beat
		// the slower of the two either, so both bounds are reported.
		bw := float64(io.BytesRead) / io.IOTime.Seconds()
		bound := bw / float64(m.Plan().BytesPerToken)
		rate := float64(tokens) / total.Seconds()
		compute := (total - io.Wait).Seconds() / float64(tokens)
		pipe := min(bound, 1/compute)
		fmt.Fprintf(w, "read bandwidth %.2f GB/s → I/O bound %.2f tok/s for %.1f MiB/token; compute alone %.2f tok/s; measured %.2f tok/s overall: %.0f%% of the I/O bound, %.0f%% of min(I/O, compute) %.2f tok/s\n",
			bw/1e9, bound, float64(m.Plan().BytesPerToken)/(1<<20), 1/compute, rate, 100*rate/bound, 100*rate/pipe, pipe)
	}
}
