package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/format"
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
	sessions   int // sessions the budget holds (qsf serve --parallel)
	kvType     string
	kvDefault  string // the KV type when --kv-type is not given and the budget allows it ("" = the library's)
	kvEvict    string
	noPrefetch bool
	dropCache  bool

	logLevel string
	stderr   io.Writer // where warnings go: the flag set's output
}

func (mf *modelFlags) register(fs *flag.FlagSet) {
	mf.stderr = fs.Output()
	fs.StringVar(&mf.logLevel, "log-level", "warn", "log messages at this level and above on stderr: debug, info, warn or error")
	fs.StringVar(&mf.path, "m", "", "model file (GGUF or QSF), or the NAME of one in the model folder (qsf list)")
	fs.StringVar(&mf.synthetic, "synthetic", "", "instead of -m, run a RANDOM-WEIGHT model of this shape (e.g. tiny), written once to the temp dir: a demo that needs no download; its output is noise")
	fs.IntVar(&mf.threads, "threads", 0, "threads (0 = one per physical core)")
	fs.IntVar(&mf.ctx, "ctx", 0, "context length in tokens (0 = the model's, at most 4096)")
	fs.StringVar(&mf.kernel, "kernel", "", "kernel tier: generic, avx2, avx512, neon or neon-dotprod (default: best available; qsf kernels lists them)")
	fs.BoolVar(&mf.noMmap, "no-mmap", false, "read the weights into memory instead of mapping the file")
	fs.BoolVar(&mf.noRepack, "no-repack", false, "keep Q4_0, Q8_0, QSF rotated and F32 weights (and Q6_K on the generic kernel tier) in the file's layout (mapped in place) instead of repacking them at load for the faster kernels")
	fs.StringVar(&mf.budget, "ram-budget", "", "peak memory budget, e.g. 200MB or 1.5GiB (streams the layers when the model does not fit)")
	kv := "f32"
	if mf.kvDefault != "" {
		kv = mf.kvDefault
	}
	fs.StringVar(&mf.kvType, "kv-type", "", "KV cache type: f32, f16, q8, q4 or q2 (default "+kv+", less under a tight budget)")
	fs.StringVar(&mf.kvEvict, "kv-evict", "", "run past the context: window (sliding) or h2o (heavy hitters + recent)")
	fs.BoolVar(&mf.noPrefetch, "no-prefetch", false, "streaming: use the smallest ring buffer (read at most about one matrix group ahead)")
	fs.BoolVar(&mf.dropCache, "drop-cache", false, "streaming: drop the file's pages from the page cache after reading them")
}

// config returns the library configuration the flags ask for.
func (mf *modelFlags) config() (qsf.Config, error) {
	cfg := qsf.Config{Threads: mf.threads, ContextLength: mf.ctx, Kernel: mf.kernel, NoMmap: mf.noMmap, NoRepack: mf.noRepack, Sessions: mf.sessions,
		KVType: mf.kvType, KVEviction: mf.kvEvict, NoPrefetch: mf.noPrefetch, DropPageCache: mf.dropCache}
	level, err := parseLevel(mf.logLevel)
	if err != nil {
		return cfg, err
	}
	cfg.Logger = newLogger(mf.stderr, level)
	if mf.budget != "" {
		n, err := plan.ParseBytes(mf.budget)
		if err != nil {
			return cfg, usagef("--ram-budget: %v", err)
		}
		cfg.RAMBudget = n
	}
	return cfg, nil
}

func (mf *modelFlags) load() (*qsf.Model, error) { return mf.loadWith(nil) }

// kvDefault returns the KV type a command prefers, kv, for a model the
// user gave no --kv-type: kv when there is no budget or when the budget
// holds the library's own choice at full precision (f32, which kv is
// smaller than), else "" to let the plan lower the precision further.
func kvDefault(path string, cfg qsf.Config, kv string) string {
	if cfg.RAMBudget == 0 {
		return kv
	}
	if p, err := qsf.PlanFile(path, cfg); err == nil && p.KVType == "f32" {
		return kv
	}
	return ""
}

// loadWith loads the model, with adjust (when non-nil) changing the
// configuration the flags ask for.
func (mf *modelFlags) loadWith(adjust func(*qsf.Config)) (*qsf.Model, error) {
	if mf.synthetic != "" {
		if mf.path != "" {
			return nil, usagef("pass -m FILE or --synthetic SHAPE, not both")
		}
		path, err := syntheticModel(mf.synthetic, mf.stderr)
		if err != nil {
			return nil, err
		}
		mf.path = path
	}
	if mf.path == "" {
		return nil, usagef("no model: pass -m FILE (or --synthetic tiny for a random-weight demo)")
	}
	mf.path = resolveModel(mf.path)
	cfg, err := mf.config()
	if err != nil {
		return nil, err
	}
	var bar *loadBar
	if isTerminal(mf.stderr) {
		bar = &loadBar{w: mf.stderr, name: filepath.Base(mf.path), start: time.Now()}
		cfg.LoadProgress = bar.update
	}
	if adjust != nil {
		adjust(&cfg)
	}
	if cfg.KVType == "" && mf.kvDefault != "" {
		cfg.KVType = kvDefault(mf.path, cfg, mf.kvDefault)
	}
	m, err := qsf.Load(mf.path, cfg)
	bar.clear()
	if errors.Is(err, format.ErrBadMagic) {
		return nil, fmt.Errorf("%s is neither GGUF nor QSF; a llama2.c checkpoint (.bin) or a Hugging Face folder must be converted first: qsf convert %s model.qsf (%w)",
			mf.path, mf.path, err)
	}
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

// loadBar draws load progress on a terminal, once a load has taken more
// than a second.
type loadBar struct {
	w     io.Writer
	name  string
	start time.Time
	last  time.Time
	drawn bool
}

func (b *loadBar) update(done, total int64) {
	now := time.Now()
	if now.Sub(b.start) < time.Second || (now.Sub(b.last) < 100*time.Millisecond && done < total) {
		return
	}
	b.last, b.drawn = now, true
	fmt.Fprintf(b.w, "\r\x1b[Kloading %s: %3d%% of %s (%.0f s)", b.name, 100*done/max(total, 1), mib(total), now.Sub(b.start).Seconds())
}

// clear erases the bar, if it was drawn (b may be nil).
func (b *loadBar) clear() {
	if b != nil && b.drawn {
		fmt.Fprint(b.w, "\r\x1b[K")
	}
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return fmt.Sprint(*s) }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func cmdRun(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("run", "-m FILE -p PROMPT [flags]", stderr)
	var mf modelFlags
	mf.register(fs)
	prompt := fs.String("p", "", "prompt (- reads it from stdin)")
	promptFile := fs.String("file", "", "read the prompt from this file")
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
	chatMode := fs.Bool("chat", false, "send the prompt as one user message through the model's chat template (see qsf chat)")
	system := fs.String("system", "", "with --chat: a system message before the prompt")
	tmpl := fs.String("chat-template", "", "with --chat: a built-in chat format name or a template file (default: the model's)")
	grammarFile := fs.String("grammar", "", "restrict the output to this GBNF grammar file")
	schema := fs.String("json-schema", "", "restrict the output to JSON valid against this JSON Schema (a file, or the schema itself)")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	opts := qsf.GenerateOptions{MaxTokens: *n, Sampling: so, Stop: stops}
	if err := structuredOutput(&opts, *grammarFile, *schema); err != nil {
		return err
	}
	so.Temperature, so.TopK, so.TopP, so.MinP = float32(*temp), *topK, float32(*topP), float32(*minP)
	so.RepeatPenalty, so.FrequencyPenalty, so.PresencePenalty = float32(*rep), float32(*freq), float32(*pres)
	if err := so.Validate(); err != nil {
		return usagef("%v", err)
	}
	if err := readPrompt(prompt, *promptFile, stdin); err != nil {
		return err
	}

	var m *qsf.Model
	var err error
	if *chatMode {
		m, err = loadChatModel(&mf, *tmpl)
	} else {
		m, err = mf.load()
	}
	if err != nil {
		return err
	}
	defer m.Close()
	if *verbose {
		printInfo(stderr, m)
		m.Plan().Print(stderr)
	}
	if n, room := len(m.Tokenize(*prompt, qsf.TokenizeOptions{})), m.Info().ContextLength; n > room && mf.kvEvict == "" {
		return usagef("the prompt is %d tokens, longer than the context of %d (raise --ctx, or --kv-evict window)", n, room)
	}
	s, err := m.NewSession()
	if err != nil {
		return err
	}
	defer s.Close()

	ctx, stop := interruptContext()
	defer stop()
	if !*asJSON && !*chatMode {
		fmt.Fprint(stdout, *prompt)
	}
	opts.Sampling = so
	gen := opts
	show := func(t qsf.Token) error {
		if !*asJSON {
			_, err := io.WriteString(stdout, t.Text)
			return err
		}
		return nil
	}
	var res qsf.Result
	if *chatMode {
		var msgs []qsf.Message
		if *system != "" {
			msgs = append(msgs, qsf.Message{Role: "system", Content: *system})
		}
		var cr qsf.ChatResult
		cr, err = s.Chat(ctx, append(msgs, qsf.Message{Role: "user", Content: *prompt}), gen, show)
		res = cr.Result
	} else {
		res, err = s.Generate(ctx, *prompt, gen, show)
	}
	if err != nil {
		return err
	}
	if res.Reason == qsf.StopContext {
		fmt.Fprintf(stderr, "\nqsf: warning: the context of %d tokens is full: generation stopped after %d tokens (raise --ctx, or --kv-evict window)\n",
			m.Info().ContextLength, len(res.Tokens))
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
	if (opts.GBNF != "" || opts.JSONSchema != nil) && res.Reason != qsf.StopGrammar && res.Reason != qsf.StopEOS {
		fmt.Fprintf(stderr, "qsf: the output is incomplete: generation stopped (%s) before the grammar was complete\n", res.Reason)
	}
	return nil
}

// structuredOutput sets the grammar options from --grammar and
// --json-schema (a file name, or JSON text when it starts with '{').
func structuredOutput(opts *qsf.GenerateOptions, grammarFile, schema string) error {
	if grammarFile != "" && schema != "" {
		return usagef("--grammar and --json-schema exclude each other")
	}
	if grammarFile != "" {
		text, err := os.ReadFile(grammarFile)
		if err != nil {
			return err
		}
		opts.GBNF = string(text)
	}
	if schema != "" {
		text := []byte(schema)
		if t := strings.TrimSpace(schema); !strings.HasPrefix(t, "{") && t != "true" {
			var err error
			if text, err = os.ReadFile(schema); err != nil {
				return err
			}
		}
		opts.JSONSchema = text
	}
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

// readPrompt sets *prompt from stdin when it is "-", or from file when
// file is not empty.
func readPrompt(prompt *string, file string, stdin io.Reader) error {
	switch {
	case file != "" && *prompt != "":
		return usagef("pass -p PROMPT or --file FILE, not both")
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		*prompt = string(b)
	case *prompt == "-":
		b, err := io.ReadAll(stdin)
		if err != nil {
			return fmt.Errorf("reading the prompt from stdin: %w", err)
		}
		*prompt = string(b)
	}
	return nil
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
	ctx, stop := interruptContext()
	defer stop()
	return path, writeSynthFile(ctx, plan, path, synth.WriteOptions{})
}
