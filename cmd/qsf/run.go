package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/plan"
	"github.com/qsf-llm/qsf/synth"
)

// modelFlags are the flags every command that loads a model shares.
type modelFlags struct {
	path      string
	synthetic string
	threads   int
	ctx       int
	kernel    string
	noMmap    bool
	noRepack  bool

	budget     string
	kvType     string
	kvEvict    string
	noPrefetch bool
	dropCache  bool
}

func (mf *modelFlags) register(fs interface {
	StringVar(*string, string, string, string)
	IntVar(*int, string, int, string)
	BoolVar(*bool, string, bool, string)
}) {
	fs.StringVar(&mf.path, "m", "", "model file (GGUF or QSF)")
	fs.StringVar(&mf.synthetic, "synthetic", "", "instead of -m, run a RANDOM-WEIGHT model of this shape (e.g. tiny), written once to the temp dir: a demo that needs no download; its output is noise")
	fs.IntVar(&mf.threads, "threads", 0, "threads (0 = one per physical core)")
	fs.IntVar(&mf.ctx, "ctx", 0, "context length in tokens (0 = the model's, at most 4096)")
	fs.StringVar(&mf.kernel, "kernel", "", "kernel tier: generic, avx2 or avx512 (default: best available)")
	fs.BoolVar(&mf.noMmap, "no-mmap", false, "read the weights into memory instead of mapping the file")
	fs.BoolVar(&mf.noRepack, "no-repack", false, "keep Q4_0 and Q8_0 weights in the file's layout (mapped in place) instead of repacking them at load for the faster kernels")
	fs.StringVar(&mf.budget, "ram-budget", "", "peak memory budget, e.g. 200MB or 1.5GiB (streams the layers when the model does not fit)")
	fs.StringVar(&mf.kvType, "kv-type", "", "KV cache type: f32, f16, q8, q4 or q2 (default f32, less under a tight budget)")
	fs.StringVar(&mf.kvEvict, "kv-evict", "", "run past the context: window (sliding) or h2o (heavy hitters + recent)")
	fs.BoolVar(&mf.noPrefetch, "no-prefetch", false, "streaming: use the smallest ring buffer (read at most about one matrix group ahead)")
	fs.BoolVar(&mf.dropCache, "drop-cache", false, "streaming: drop the file's pages from the page cache after reading them")
}

// config returns the library configuration the flags ask for.
func (mf *modelFlags) config() (qsf.Config, error) {
	cfg := qsf.Config{Threads: mf.threads, ContextLength: mf.ctx, Kernel: mf.kernel, NoMmap: mf.noMmap, NoRepack: mf.noRepack,
		KVType: mf.kvType, KVEviction: mf.kvEvict, NoPrefetch: mf.noPrefetch, DropPageCache: mf.dropCache}
	if mf.budget != "" {
		n, err := plan.ParseBytes(mf.budget)
		if err != nil {
			return cfg, usagef("--ram-budget: %v", err)
		}
		cfg.RAMBudget = n
	}
	return cfg, nil
}

func (mf *modelFlags) load() (*qsf.Model, error) {
	if mf.synthetic != "" {
		if mf.path != "" {
			return nil, usagef("pass -m FILE or --synthetic SHAPE, not both")
		}
		path, err := syntheticModel(mf.synthetic, os.Stderr)
		if err != nil {
			return nil, err
		}
		mf.path = path
	}
	if mf.path == "" {
		return nil, usagef("no model: pass -m FILE (or --synthetic tiny for a random-weight demo)")
	}
	cfg, err := mf.config()
	if err != nil {
		return nil, err
	}
	m, err := qsf.Load(mf.path, cfg)
	if err != nil {
		return nil, err
	}
	// The command is all the process runs: keep the Go heap within what
	// the RAM budget leaves, as the model suggests.
	if limit := m.MemoryLimit(); limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	return m, nil
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return fmt.Sprint(*s) }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func cmdRun(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("run", "-m FILE -p PROMPT [flags]", stderr)
	var mf modelFlags
	mf.register(fs)
	prompt := fs.String("p", "", "prompt")
	n := fs.Int("n", 64, "tokens to generate (0 = until end of text or a full context)")
	var so qsf.SamplerOptions
	temp := fs.Float64("temp", 0.8, "temperature (0 = greedy)")
	topK := fs.Int("top-k", 40, "keep the K most likely tokens (0 = off)")
	topP := fs.Float64("top-p", 0.95, "nucleus sampling threshold (1 = off)")
	minP := fs.Float64("min-p", 0.05, "drop tokens less likely than this times the best (0 = off)")
	rep := fs.Float64("repeat-penalty", 1.0, "repetition penalty (1 = off)")
	freq := fs.Float64("frequency-penalty", 0, "frequency penalty")
	pres := fs.Float64("presence-penalty", 0, "presence penalty")
	fs.IntVar(&so.RepeatLastN, "repeat-last-n", 64, "penalty window in tokens")
	fs.Int64Var(&so.Seed, "seed", -1, "random seed (-1 = from the clock)")
	var stops stringList
	fs.Var(&stops, "stop", "stop when this string appears (repeatable)")
	asJSON := fs.Bool("json", false, "print one JSON object at the end instead of streaming text")
	verbose := fs.Bool("verbose", false, "print model information and speed to stderr")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	so.Temperature, so.TopK, so.TopP, so.MinP = float32(*temp), *topK, float32(*topP), float32(*minP)
	so.RepeatPenalty, so.FrequencyPenalty, so.PresencePenalty = float32(*rep), float32(*freq), float32(*pres)

	m, err := mf.load()
	if err != nil {
		return err
	}
	defer m.Close()
	if *verbose {
		printInfo(stderr, m)
		m.Plan().Print(stderr)
	}
	s, err := m.NewSession()
	if err != nil {
		return err
	}
	defer s.Close()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if !*asJSON {
		fmt.Fprint(stdout, *prompt)
	}
	res, err := s.Generate(ctx, *prompt, qsf.GenerateOptions{MaxTokens: *n, Sampling: so, Stop: stops},
		func(t qsf.Token) error {
			if !*asJSON {
				_, err := io.WriteString(stdout, t.Text)
				return err
			}
			return nil
		})
	if err != nil {
		return err
	}
	st := s.Stats()
	if *verbose {
		fmt.Fprintf(stderr, "prompt: %d tokens, %.1f tok/s; generated: %d tokens, %.1f tok/s; stop: %s\n",
			st.PromptTokens, st.PrefillTokensPerSecond(), st.GeneratedTokens, st.DecodeTokensPerSecond(), res.Reason)
		printIO(stderr, m, s, st.PromptTokens+st.GeneratedTokens)
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(struct {
			PromptTokens []int   `json:"prompt_tokens"`
			Tokens       []int   `json:"tokens"`
			Text         string  `json:"text"`
			StopReason   string  `json:"stop_reason"`
			PrefillTokS  float64 `json:"prefill_tok_s"`
			DecodeTokS   float64 `json:"decode_tok_s"`
		}{nonNil(res.PromptTokens), nonNil(res.Tokens), res.Text, string(res.Reason), st.PrefillTokensPerSecond(), st.DecodeTokensPerSecond()})
	}
	fmt.Fprintln(stdout)
	return nil
}

func printInfo(w io.Writer, m *qsf.Model) {
	in := m.Info()
	fmt.Fprintf(w, "model: %s (%s), %d layers, embd %d, heads %d/%d, ffn %d, vocab %d, context %d (trained %d), weights %.1f MiB, kernel %s\n",
		in.Name, in.Architecture, in.Layers, in.Embedding, in.Heads, in.KVHeads, in.FFN, in.Vocab,
		in.ContextLength, in.TrainContext, float64(in.WeightBytes)/(1<<20), in.Kernel)
}

func nonNil(ids []int) []int {
	if ids == nil {
		return []int{}
	}
	return ids
}

// syntheticModel returns the path of a random-weight q8_0 model of the
// named shape in the temp dir, writing it first if it is not there, and
// says on stderr that its output is noise.
func syntheticModel(shapeName string, stderr io.Writer) (string, error) {
	shape, err := synth.LookupShape(shapeName)
	if err != nil {
		return "", usagef("%v", err)
	}
	plan, err := synth.NewPlan(shape, synth.Q8_0, 1)
	if err != nil {
		return "", err
	}
	size, err := plan.FileSize()
	if err != nil {
		return "", err
	}
	path := filepath.Join(os.TempDir(), fmt.Sprintf("qsf-synthetic-%s-q8_0.gguf", shape.Name))
	fmt.Fprintf(stderr, "qsf: RANDOM WEIGHTS: synthetic %s model %s (%s); its output is noise, not language\n", shape.Name, path, mib(size))
	if st, err := os.Stat(path); err == nil && st.Size() == size {
		return path, nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriterSize(tmp, 1<<20)
	if err := plan.Write(w, synth.WriteOptions{}); err != nil {
		tmp.Close()
		return "", err
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	return path, os.Rename(tmp.Name(), path)
}
