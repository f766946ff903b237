package main

import (
	"fmt"
	"io"
	"time"

	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/model"
	"github.com/qsf-llm/qsf/stream"
)

// expertReport is the expert cache of the measured decode steps of a
// model that streams its routed experts, per token.
type expertReport struct {
	Slots             int     `json:"cache_experts"`
	Total             int     `json:"experts"`
	ExpertBytes       int64   `json:"expert_bytes"`
	PlanBytesPerToken int64   `json:"plan_bytes_per_token"` // expected with uniform routing
	HitRate           float64 `json:"hit_rate"`
	UnusedPerToken    float64 `json:"unused_per_token"` // experts read on a wrong guess
	ReadBytesPerToken float64 `json:"read_bytes_per_token"`
	ReadMsPerToken    float64 `json:"read_ms_per_token"` // the reader's time (overlapping the compute)
	WaitMsPerToken    float64 `json:"wait_ms_per_token"` // the forward pass's waits for reads
	ReadGBs           float64 `json:"read_gb_s"`

	// The page cache's read rate for expert-sized pieces, measured in
	// the same run after the decode steps (warm), and the bound it
	// gives: rate ÷ bytes read per token.
	PageCache *readRates `json:"page_cache,omitempty"`

	tokens int
	stats  stream.ExpertStats
}

// readRates are measured read rates of a file's experts in bytes per
// second.
type readRates struct {
	Threads       int     `json:"threads"`
	Pread1        float64 `json:"pread_1_thread"`
	PreadN        float64 `json:"pread_n_threads"`
	BoundTokS     float64 `json:"bound_tok_s"` // max(Pread1, PreadN) ÷ read bytes per token
	BoundFraction float64 `json:"bound_fraction,omitzero"`
}

func (r *expertReport) add(tokens int, s stream.ExpertStats) {
	r.tokens += tokens
	r.stats.Hits += s.Hits
	r.stats.Misses += s.Misses
	r.stats.Unused += s.Unused
	r.stats.BytesRead += s.BytesRead
	r.stats.ReadTime += s.ReadTime
	r.stats.WaitTime += s.WaitTime
}

func (r *expertReport) finish() {
	if r.tokens == 0 {
		return
	}
	n := float64(r.tokens)
	r.HitRate = r.stats.HitRate()
	r.UnusedPerToken = float64(r.stats.Unused) / n
	r.ReadBytesPerToken = float64(r.stats.BytesRead) / n
	r.ReadMsPerToken = r.stats.ReadTime.Seconds() * 1000 / n
	r.WaitMsPerToken = r.stats.WaitTime.Seconds() * 1000 / n
	if r.stats.ReadTime > 0 {
		r.ReadGBs = float64(r.stats.BytesRead) / r.stats.ReadTime.Seconds() / 1e9
	}
}

// measure measures the page cache's read rates of the experts of the
// file at path with 1 and threads threads, after a warm-up of the same
// pieces, and the bound they give decodeTokS.
func (r *expertReport) measure(path string, threads int, decodeTokS float64) error {
	f, err := format.OpenWith(path, metadataOnly)
	if err != nil {
		return err
	}
	defer f.Close()
	embd, _ := f.Tensor("token_embd.weight")
	hp, err := model.ParseHparams(&f.Metadata, embd.Rows())
	if err != nil {
		return err
	}
	lay, err := stream.NewExpertLayout(f, &hp)
	if err != nil {
		return err
	}
	const n, seed = 512, 7 // about a token and a half of a 30B-A3B's misses
	rate := func(threads int) (float64, error) {
		if _, err := lay.MeasureReads(path, threads, n, seed); err != nil { // warm-up
			return 0, err
		}
		return lay.MeasureReads(path, threads, n, seed)
	}
	rr := &readRates{Threads: threads}
	if rr.Pread1, err = rate(1); err != nil {
		return err
	}
	if rr.PreadN, err = rate(threads); err != nil {
		return err
	}
	if r.ReadBytesPerToken > 0 {
		rr.BoundTokS = max(rr.Pread1, rr.PreadN) / r.ReadBytesPerToken
		rr.BoundFraction = decodeTokS / rr.BoundTokS
	}
	r.PageCache = rr
	return nil
}

func (r *expertReport) print(w io.Writer) {
	fmt.Fprintf(w, "expert cache: %d of %d experts (%.1f MiB each); decode hit rate %.1f%%, reads %.1f MiB/token (planned %.1f for uniform routing; %.1f experts/token read on a wrong guess), reader busy %.2f ms/token (%.2f GB/s), decode waited %.2f ms/token\n",
		r.Slots, r.Total, float64(r.ExpertBytes)/(1<<20), 100*r.HitRate, r.ReadBytesPerToken/(1<<20), float64(r.PlanBytesPerToken)/(1<<20),
		r.UnusedPerToken, r.ReadMsPerToken, r.ReadGBs, r.WaitMsPerToken)
	if pc := r.PageCache; pc != nil {
		fmt.Fprintf(w, "page cache, expert-sized pieces (warm): pread %.2f GB/s with 1 thread, %.2f GB/s with %d → bound %.2f tok/s; decode at %.0f%% of the bound\n",
			pc.Pread1/1e9, pc.PreadN/1e9, pc.Threads, pc.BoundTokS, 100*pc.BoundFraction)
	}
}

// printExperts reports a session's expert cache after tokens tokens.
func printExperts(w io.Writer, slots, total int, s stream.ExpertStats, tokens int, elapsed time.Duration) {
	if tokens == 0 {
		return
	}
	fmt.Fprintf(w, "expert cache: %d of %d experts; hit rate %.1f%% (%d hits, %d misses, %d read on a wrong guess), %.1f MiB read per token, reader busy %.2f ms/token, decode waited %.2f ms/token, %.2f tok/s overall\n",
		slots, total, 100*s.HitRate(), s.Hits, s.Misses, s.Unused, float64(s.BytesRead)/float64(tokens)/(1<<20),
		s.ReadTime.Seconds()*1000/float64(tokens), s.WaitTime.Seconds()*1000/float64(tokens), float64(tokens)/elapsed.Seconds())
}
