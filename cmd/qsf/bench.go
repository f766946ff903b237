package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/internal/atomicfile"
	"github.com/qsf-llm/qsf/kernels"
	"github.com/qsf-llm/qsf/stream"
)

// benchResult is what qsf bench measures; it is also its --json output.
type benchResult struct {
	Model  string `json:"model"`
	Kernel string `json:"kernel"`
	// KernelTiers names, per weight type of the model's matrices, the
	// tiers whose code multiplies them where that is not all Kernel's
	// own (a tier runs another's kernels where it has no faster ones).
	KernelTiers  map[string]typeTiers `json:"kernel_tiers,omitempty"`
	Threads      int                  `json:"threads"`
	PromptTokens int                  `json:"prompt_tokens"`
	GenTokens    int                  `json:"gen_tokens"`
	Reps         int                  `json:"reps"`

	PrefillTokS    float64   `json:"prefill_tok_s"` // median over the repetitions
	PrefillTokSMin float64   `json:"prefill_tok_s_min"`
	PrefillTokSMax float64   `json:"prefill_tok_s_max"`
	DecodeTokS     float64   `json:"decode_tok_s"` // median
	DecodeTokSMin  float64   `json:"decode_tok_s_min"`
	DecodeTokSMax  float64   `json:"decode_tok_s_max"`
	PrefillRuns    []float64 `json:"prefill_tok_s_runs"`
	DecodeRuns     []float64 `json:"decode_tok_s_runs"`

	WeightBytesPerToken int64   `json:"weight_bytes_per_token"`
	DecodeGBs           float64 `json:"decode_gb_s"`

	WallSeconds  float64 `json:"wall_seconds"`            // of the measured repetitions
	CPUSeconds   float64 `json:"cpu_seconds,omitzero"`    // user+sys over the same time
	PeakRSSBytes int64   `json:"peak_rss_bytes,omitzero"` // VmHWM (Linux)

	MemBW *memBW `json:"membw,omitempty"`
	// DecodeBWFraction is decode GB/s over the N-thread read bandwidth.
	DecodeBWFraction float64 `json:"decode_bw_fraction,omitzero"`

	// Streaming reports the file reads of the decode steps when the
	// model streams its layers (a --ram-budget below the resident peak).
	Streaming *streamReport `json:"streaming,omitempty"`
	// Experts reports the expert cache of the decode steps when the
	// model streams its routed experts (a mixture of experts under a
	// budget).
	Experts *expertReport `json:"experts,omitempty"`
	// ActiveParams is the number of weights one token uses.
	ActiveParams int64 `json:"active_params,omitzero"`
}

// typeTiers names the tiers whose kernels multiply one weight type: with
// one activation (decode) and several (prefill; "" when they go one at a
// time through the decode kernel).
type typeTiers struct {
	Decode  string `json:"decode"`
	Prefill string `json:"prefill"`
}

// kernelTiers returns, for the matrix types of the model file at path,
// the tiers tier runs for them where they differ from tier itself; Q4_0
// and Q8_0 matrices count as their repacked types when repack is set.
func kernelTiers(path, tier string, repack bool) (map[string]typeTiers, error) {
	tr, err := kernels.TierNamed(tier)
	if err != nil {
		return nil, err
	}
	f, err := format.OpenWith(path, metadataOnly)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out map[string]typeTiers
	for _, t := range f.Tensors {
		if len(t.Shape) != 2 || t.Name == "token_embd.weight" {
			continue
		}
		typ := t.Type
		if repack {
			typ, _ = tr.RepackType(t.Type, int(t.Shape[1]), int(t.Shape[0]))
		}
		rows, tile := tr.KernelTiers(typ, int(t.Shape[1]))
		if rows == tier && (tile == tier || tile == "") {
			continue
		}
		if out == nil {
			out = make(map[string]typeTiers)
		}
		name := t.Type.String()
		if typ != t.Type {
			name += " repacked"
		}
		out[name] = typeTiers{Decode: rows, Prefill: tile}
	}
	return out, nil
}

// memBW is this machine's measured read bandwidth.
type memBW struct {
	Bytes       int64   `json:"bytes"`
	Threads     int     `json:"threads"`
	OneThreadGB float64 `json:"one_thread_gb_s"`
	NThreadsGB  float64 `json:"n_threads_gb_s"`
}

// streamReport is the I/O of the measured decode steps of a streaming
// model, per token, and the decode speed the reads allow.
type streamReport struct {
	PlanPeakBytes     int64   `json:"plan_peak_bytes"`
	PlanBytesPerToken int64   `json:"plan_bytes_per_token"`
	RingBytes         int64   `json:"ring_bytes"`
	RingLayers        float64 `json:"ring_layers"`
	ReadBytesPerToken float64 `json:"read_bytes_per_token"`
	IOMsPerToken      float64 `json:"io_ms_per_token"`          // reading and decompressing (I/O goroutine)
	WaitMsPerToken    float64 `json:"io_wait_ms_per_token"`     // the forward pass waiting for a layer
	ComputeMsPerToken float64 `json:"compute_ms_per_token"`     // decode time minus the wait
	NotPrefetched     float64 `json:"not_prefetched_per_token"` // reads started on demand
	StallsPerToken    float64 `json:"stalls_per_token"`         // pieces the forward pass waited for
	ReadGBs           float64 `json:"read_gb_s"`                // bytes read / I/O time
	BoundTokS         float64 `json:"bound_tok_s"`              // read bandwidth / planned bytes per token
	BoundFraction     float64 `json:"bound_fraction"`

	tokens int
	decode time.Duration
	io     stream.Stats
}

func (r *streamReport) add(decode time.Duration, tokens int, io stream.Stats) {
	r.tokens += tokens
	r.decode += decode
	r.io.BytesRead += io.BytesRead
	r.io.IOTime += io.IOTime
	r.io.Wait += io.Wait
	r.io.Misses += io.Misses
	r.io.Stalls += io.Stalls
}

func (r *streamReport) finish() {
	if r.tokens == 0 {
		return
	}
	n := float64(r.tokens)
	ms := func(d time.Duration) float64 { return d.Seconds() * 1000 / n }
	r.ReadBytesPerToken = float64(r.io.BytesRead) / n
	r.IOMsPerToken, r.WaitMsPerToken, r.ComputeMsPerToken = ms(r.io.IOTime), ms(r.io.Wait), ms(r.decode-r.io.Wait)
	r.NotPrefetched = float64(r.io.Misses) / n
	r.StallsPerToken = float64(r.io.Stalls) / n
	if r.io.IOTime > 0 && r.PlanBytesPerToken > 0 {
		r.ReadGBs = float64(r.io.BytesRead) / r.io.IOTime.Seconds() / 1e9
		r.BoundTokS = r.ReadGBs * 1e9 / float64(r.PlanBytesPerToken)
		r.BoundFraction = n / r.decode.Seconds() / r.BoundTokS
	}
}

func cmdBench(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench", "-m FILE [flags] | --membw", stderr)
	var mf modelFlags
	mf.register(fs)
	fs.IntVar(&mf.threads, "t", 0, "threads (same as --threads)")
	p := fs.Int("p", 128, "prompt tokens to prefill")
	n := fs.Int("n", 64, "tokens to decode after the prompt")
	reps := fs.Int("r", 3, "measured repetitions (after one warm-up)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	membw := fs.Bool("membw", false, "measure this machine's memory read bandwidth (with -m, also compare decode with it)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the model runs to this `file` (go tool pprof)")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if *p < 1 || *n < 0 || *reps < 1 {
		return usagef("need -p ≥ 1, -n ≥ 0 and -r ≥ 1")
	}
	if mf.path == "" && !*membw {
		return usagef("no model: pass -m FILE (or --membw)")
	}
	var res benchResult
	if mf.path != "" {
		if mf.ctx == 0 {
			mf.ctx = *p + *n
		}
		var prof *atomicfile.File
		if *cpuProfile != "" {
			var err error
			if prof, err = atomicfile.Create(context.Background(), *cpuProfile); err != nil {
				return err
			}
			defer prof.Abort()
			if err := pprof.StartCPUProfile(prof); err != nil {
				return err
			}
		}
		r, err := runBench(&mf, *p, *n, *reps, stderr, *asJSON)
		if prof != nil {
			pprof.StopCPUProfile()
			if err == nil {
				err = prof.Commit()
			}
		}
		if err != nil {
			return err
		}
		res = r
	}
	if *membw {
		threads := mf.threads
		if threads <= 0 {
			threads = runtime.NumCPU()
		}
		bw := measureMemBW(1<<30, threads, 3)
		res.MemBW = &bw
		if res.DecodeGBs > 0 && bw.NThreadsGB > 0 {
			res.DecodeBWFraction = res.DecodeGBs / bw.NThreadsGB
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	printBench(stdout, &res)
	return nil
}

// runBench loads the model and measures prefill and decode speed.
func runBench(mf *modelFlags, p, n, reps int, stderr io.Writer, quiet bool) (benchResult, error) {
	m, err := mf.load()
	if err != nil {
		return benchResult{}, err
	}
	defer m.Close()
	in := m.Info()
	if p+n > in.ContextLength {
		return benchResult{}, usagef("-p %d + -n %d exceeds the context of %d", p, n, in.ContextLength)
	}
	wb, err := weightBytesPerToken(mf.path)
	if err != nil {
		return benchResult{}, err
	}
	threads := mf.threads
	if threads <= 0 {
		threads = qsfDefaultThreads()
	}
	res := benchResult{Model: in.Name, Kernel: in.Kernel, Threads: threads, PromptTokens: p, GenTokens: n,
		Reps: reps, WeightBytesPerToken: wb}
	if res.KernelTiers, err = kernelTiers(mf.path, in.Kernel, !mf.noRepack && !m.Streaming()); err != nil {
		return benchResult{}, err
	}
	if !quiet {
		printInfo(stderr, m)
	}
	res.ActiveParams = m.Plan().ActiveParams
	var er *expertReport
	if m.ExpertStreaming() {
		p := m.Plan()
		er = &expertReport{Slots: p.ExpertSlots, Total: p.ExpertsTotal, ExpertBytes: p.ExpertBytes, PlanBytesPerToken: p.BytesPerToken}
	}
	var sr *streamReport
	if m.Streaming() {
		p := m.Plan()
		sr = &streamReport{PlanPeakBytes: p.PeakBytes, PlanBytesPerToken: p.BytesPerToken, RingBytes: p.RingBytes, RingLayers: p.RingLayers}
	}

	// Each repetition has a prompt of its own: a mixture of experts's
	// shared expert cache would otherwise hold exactly the experts the
	// previous repetition's replay of the same tokens used.
	ids := make([]int, p)
	prompt := func(rep int) []int {
		rng := rand.New(rand.NewPCG(42, uint64(42+rep+1)))
		for i := range ids {
			ids[i] = 3 + rng.IntN(max(in.Vocab-3, 1)) // past <unk>, <s>, </s> in LLaMA vocabularies
		}
		return ids
	}
	ctx := context.Background()
	var cpu0 time.Duration
	var start time.Time
	for rep := -1; rep < reps; rep++ { // rep -1 is the warm-up
		if rep == 0 {
			cpu0, start = cpuTime(), time.Now()
		}
		pre, dec, io, ex, err := benchOnce(ctx, m, prompt(rep), n)
		if err != nil {
			return benchResult{}, err
		}
		if rep >= 0 && er != nil {
			er.add(n, ex)
		}
		if rep >= 0 && sr != nil {
			sr.add(dec, n, io)
		}
		if rep >= 0 {
			res.PrefillRuns = append(res.PrefillRuns, float64(p)/pre.Seconds())
			if n > 0 {
				res.DecodeRuns = append(res.DecodeRuns, float64(n)/dec.Seconds())
			}
		}
	}
	res.WallSeconds = time.Since(start).Seconds()
	if cpu := cpuTime(); cpu > 0 {
		res.CPUSeconds = (cpu - cpu0).Seconds()
	}
	res.PeakRSSBytes = peakRSS()
	res.PrefillTokS, res.PrefillTokSMin, res.PrefillTokSMax = summarize(res.PrefillRuns)
	res.DecodeTokS, res.DecodeTokSMin, res.DecodeTokSMax = summarize(res.DecodeRuns)
	res.DecodeGBs = float64(wb) * res.DecodeTokS / 1e9
	if res.DecodeRuns == nil {
		res.DecodeRuns = []float64{}
	}
	if sr != nil {
		sr.finish()
		res.Streaming = sr
	}
	if er != nil {
		er.finish()
		if n > 0 {
			if err := er.measure(mf.path, threads, res.DecodeTokS); err != nil {
				return benchResult{}, err
			}
		}
		res.Experts = er
	}
	return res, nil
}

// benchOnce prefills ids in a fresh session and then decodes n tokens
// greedily, one Forward per token. io and ex are the file reads and the
// expert cache counters of the decode steps (zero unless the model
// streams its layers or its experts).
func benchOnce(ctx context.Context, m *qsf.Model, ids []int, n int) (prefill, decode time.Duration, io stream.Stats, ex stream.ExpertStats, err error) {
	s, err := m.NewSession()
	if err != nil {
		return 0, 0, io, ex, err
	}
	defer s.Close()
	t0 := time.Now()
	logits, err := s.Forward(ctx, ids)
	if err != nil {
		return 0, 0, io, ex, err
	}
	t1 := time.Now()
	io0, ex0 := s.IOStats(), s.ExpertStats()
	for range n {
		if logits, err = s.Forward(ctx, []int{argmax(logits)}); err != nil {
			return 0, 0, io, ex, err
		}
	}
	decode = time.Since(t1)
	io1, ex1 := s.IOStats(), s.ExpertStats()
	io = stream.Stats{BytesRead: io1.BytesRead - io0.BytesRead, Reads: io1.Reads - io0.Reads, IOTime: io1.IOTime - io0.IOTime,
		Wait: io1.Wait - io0.Wait, Misses: io1.Misses - io0.Misses, Stalls: io1.Stalls - io0.Stalls}
	ex = ex1.Sub(ex0)
	return t1.Sub(t0), decode, io, ex, nil
}

func argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// summarize returns the median, minimum and maximum of x.
func summarize(x []float64) (med, lo, hi float64) {
	if len(x) == 0 {
		return 0, 0, 0
	}
	s := slices.Sorted(slices.Values(x))
	med = s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return med, s[0], s[len(s)-1]
}

// weightBytesPerToken is the weight data one decoded token reads: every
// tensor but the token embedding, of which it reads one row. With tied
// embeddings the LM head reads the whole embedding.
func weightBytesPerToken(path string) (int64, error) {
	f, err := format.OpenWith(path, metadataOnly)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var total, embd, row int64
	tied := true
	arch, _ := f.Metadata.String("general.architecture")
	experts, _ := f.Metadata.Uint(arch + ".expert_count")
	used, _ := f.Metadata.Uint(arch + ".expert_used_count")
	for _, t := range f.Tensors {
		if experts > 0 && strings.HasSuffix(t.Name, "_exps.weight") {
			total += int64(t.Size / experts * used) // the routed experts a token uses
			continue
		}
		total += int64(t.Size)
		switch t.Name {
		case "token_embd.weight":
			embd = int64(t.Size)
			if len(t.Shape) >= 2 && t.Shape[1] > 0 {
				row = embd / int64(t.Shape[1])
			}
		case "output.weight":
			tied = false
		}
	}
	if tied {
		return total, nil
	}
	return total - embd + row, nil
}

// peakRSS returns the process's peak resident set size from
// /proc/self/status (Linux), or 0 where that is not available.
func peakRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			fields := strings.Fields(rest)
			if len(fields) == 2 && fields[1] == "kB" {
				kb, err := strconv.ParseInt(fields[0], 10, 64)
				if err == nil {
					return kb << 10
				}
			}
		}
	}
	return 0
}

// qsfDefaultThreads mirrors qsf's default of one thread per physical core
// for the report; the library makes the actual choice.
func qsfDefaultThreads() int {
	return max(1, runtime.NumCPU()/threadsPerCore())
}

// threadsPerCore reads the SMT width from Linux's sysfs, or assumes 1.
func threadsPerCore() int {
	b, err := os.ReadFile("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list")
	if err != nil {
		return 1
	}
	n := 0
	for _, part := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, ok := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		if !ok {
			if err1 == nil {
				n++
			}
			continue
		}
		b, err2 := strconv.Atoi(hi)
		if err1 == nil && err2 == nil && b >= a {
			n += b - a + 1
		}
	}
	return max(n, 1)
}

// measureMemBW reads a buffer of size bytes with kernels.Touch (the
// widest loads the machine has, nothing else) on one thread and on threads
// threads, best of runs each, and returns the read bandwidths.
func measureMemBW(size int64, threads, runs int) memBW {
	buf := make([]byte, size)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = byte(i >> 12) // touch every page so the reads hit memory
	}
	best := func(k int) float64 {
		var b float64
		for range runs {
			t0 := time.Now()
			touchParallel(buf, k)
			if gbs := float64(len(buf)) / time.Since(t0).Seconds() / 1e9; gbs > b {
				b = gbs
			}
		}
		return b
	}
	bw := memBW{Bytes: int64(len(buf)), Threads: threads}
	bw.OneThreadGB = best(1)
	bw.NThreadsGB = best(threads)
	runtime.KeepAlive(buf)
	return bw
}

// sink keeps the sums alive so the compiler cannot drop the loads.
var sink uint64

// touchParallel reads buf split into k parts on k goroutines.
func touchParallel(buf []byte, k int) {
	var wg sync.WaitGroup
	sums := make([]uint64, k)
	for j := range k {
		part := buf[len(buf)*j/k : len(buf)*(j+1)/k]
		wg.Go(func() { sums[j] = kernels.Touch(part) })
	}
	wg.Wait()
	for _, s := range sums {
		sink += s
	}
}

func printBench(w io.Writer, r *benchResult) {
	if r.Model != "" {
		fmt.Fprintf(w, "model: %s, kernel %s, %d threads, %d repetitions after a warm-up\n", r.Model, r.Kernel, r.Threads, r.Reps)
		fmt.Fprintf(w, "prefill %4d tokens: %8.1f tok/s median (%.1f–%.1f)\n", r.PromptTokens, r.PrefillTokS, r.PrefillTokSMin, r.PrefillTokSMax)
		if r.GenTokens > 0 {
			fmt.Fprintf(w, "decode  %4d tokens: %8.1f tok/s median (%.1f–%.1f)\n", r.GenTokens, r.DecodeTokS, r.DecodeTokSMin, r.DecodeTokSMax)
			fmt.Fprintf(w, "weights read per token: %.1f MiB → %.2f GB/s\n", float64(r.WeightBytesPerToken)/(1<<20), r.DecodeGBs)
		}
		if r.CPUSeconds > 0 {
			fmt.Fprintf(w, "time: %.2f s wall, %.2f s CPU (user+sys, %.2f cores busy)\n", r.WallSeconds, r.CPUSeconds, r.CPUSeconds/r.WallSeconds)
		} else {
			fmt.Fprintf(w, "time: %.2f s wall\n", r.WallSeconds)
		}
		if r.PeakRSSBytes > 0 {
			fmt.Fprintf(w, "peak RSS: %.1f MiB\n", float64(r.PeakRSSBytes)/(1<<20))
		}
		if sr := r.Streaming; sr != nil {
			fmt.Fprintf(w, "streaming (planned peak %.1f MiB, ring %.1f MiB = %.2f layers): decode reads %.1f MiB/token (planned %.1f), I/O %.2f ms/token, waited %.2f ms/token (%.2f stalls), compute %.2f ms/token, %.2f reads/token started on demand\n",
				float64(sr.PlanPeakBytes)/(1<<20), float64(sr.RingBytes)/(1<<20), sr.RingLayers, sr.ReadBytesPerToken/(1<<20), float64(sr.PlanBytesPerToken)/(1<<20),
				sr.IOMsPerToken, sr.WaitMsPerToken, sr.StallsPerToken, sr.ComputeMsPerToken, sr.NotPrefetched)
			if sr.BoundTokS > 0 {
				fmt.Fprintf(w, "read bandwidth %.2f GB/s → bound %.2f tok/s; decode at %.0f%% of the bound\n", sr.ReadGBs, sr.BoundTokS, 100*sr.BoundFraction)
			}
		}
		if r.ActiveParams > 0 {
			fmt.Fprintf(w, "active parameters per token: %.4gM\n", float64(r.ActiveParams)/1e6)
		}
		if er := r.Experts; er != nil {
			er.print(w)
		}
	}
	if bw := r.MemBW; bw != nil {
		fmt.Fprintf(w, "memory read bandwidth (%d MiB buffer): %.1f GB/s with 1 thread, %.1f GB/s with %d\n",
			bw.Bytes>>20, bw.OneThreadGB, bw.NThreadsGB, bw.Threads)
		if r.DecodeBWFraction > 0 {
			fmt.Fprintf(w, "decode uses %.0f%% of the %d-thread bandwidth\n", 100*r.DecodeBWFraction, bw.Threads)
		}
	}
}

// metadataOnly opens a file for its metadata and tensor table without
// mapping it: a QSF file's sections are checked as they are opened, and
// through a mapping those reads would stay in the process's RSS, which
// bench reports as the model's.
var metadataOnly = format.OpenOptions{NoMmap: true}
