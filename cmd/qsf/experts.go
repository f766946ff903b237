package main

import (
	"fmt"
	"io"
	"time"

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
	ReadBytesPerToken float64 `json:"read_bytes_per_token"`
	ReadMsPerToken    float64 `json:"read_ms_per_token"`
	ReadGBs           float64 `json:"read_gb_s"`

	tokens int
	stats  stream.ExpertStats
}

func (r *expertReport) add(tokens int, s stream.ExpertStats) {
	r.tokens += tokens
	r.stats.Hits += s.Hits
	r.stats.Misses += s.Misses
	r.stats.BytesRead += s.BytesRead
	r.stats.ReadTime += s.ReadTime
}

func (r *expertReport) finish() {
	if r.tokens == 0 {
		return
	}
	n := float64(r.tokens)
	r.HitRate = r.stats.HitRate()
	r.ReadBytesPerToken = float64(r.stats.BytesRead) / n
	r.ReadMsPerToken = r.stats.ReadTime.Seconds() * 1000 / n
	if r.stats.ReadTime > 0 {
		r.ReadGBs = float64(r.stats.BytesRead) / r.stats.ReadTime.Seconds() / 1e9
	}
}

func (r *expertReport) print(w io.Writer) {
	fmt.Fprintf(w, "expert cache: %d of %d experts (%.1f MiB each); decode hit rate %.1f%%, reads %.1f MiB/token (planned %.1f for uniform routing) in %.2f ms/token (%.2f GB/s)\n",
		r.Slots, r.Total, float64(r.ExpertBytes)/(1<<20), 100*r.HitRate, r.ReadBytesPerToken/(1<<20), float64(r.PlanBytesPerToken)/(1<<20),
		r.ReadMsPerToken, r.ReadGBs)
}

// printExperts reports a session's expert cache after tokens tokens.
func printExperts(w io.Writer, slots, total int, s stream.ExpertStats, tokens int, elapsed time.Duration) {
	if tokens == 0 {
		return
	}
	fmt.Fprintf(w, "expert cache: %d of %d experts; hit rate %.1f%% (%d hits, %d misses), %.1f MiB read per token in %.2f ms/token, %.2f tok/s overall\n",
		slots, total, 100*s.HitRate(), s.Hits, s.Misses, float64(s.BytesRead)/float64(tokens)/(1<<20),
		s.ReadTime.Seconds()*1000/float64(tokens), float64(tokens)/elapsed.Seconds())
}
