package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"

	"github.com/qsf-llm/qsf"
)

// stdin is what qsf chat and "qsf run -p -" read (a variable so tests can
// replace it).
var stdin io.Reader = os.Stdin

// samplingFlags are the sampling flags of qsf chat.
type samplingFlags struct {
	temp, topP, minP, rep float64
	topK, lastN           int
	seed                  int64
}

func (sf *samplingFlags) register(fs interface {
	Float64Var(*float64, string, float64, string)
	IntVar(*int, string, int, string)
	Int64Var(*int64, string, int64, string)
}) {
	fs.Float64Var(&sf.temp, "temp", 0.8, "temperature (0 = greedy)")
	fs.IntVar(&sf.topK, "top-k", 40, "keep the K most likely tokens (0 = off)")
	fs.Float64Var(&sf.topP, "top-p", 0.95, "nucleus sampling threshold (1 = off)")
	fs.Float64Var(&sf.minP, "min-p", 0.05, "drop tokens less likely than this times the best (0 = off)")
	fs.Float64Var(&sf.rep, "repeat-penalty", 1.0, "repetition penalty (1 = off)")
	fs.IntVar(&sf.lastN, "repeat-last-n", 64, "penalty window in tokens")
	fs.Int64Var(&sf.seed, "seed", -1, "random seed (-1 = from the clock)")
}

func (sf *samplingFlags) options() qsf.SamplerOptions {
	return qsf.SamplerOptions{Temperature: float32(sf.temp), TopK: sf.topK, TopP: float32(sf.topP), MinP: float32(sf.minP),
		RepeatPenalty: float32(sf.rep), RepeatLastN: sf.lastN, Seed: sf.seed}
}

const chatHelp = `Type a message and press Enter. End a line with \ to continue it on the next
line, or put """ on a line of its own to start and end a multi-line message.
Commands: /reset (new conversation), /save [FILE], /load [FILE], /stats,
/set n N (most tokens per answer), /set temp T, /help.
Ctrl-C stops the answer being written; Ctrl-D (or /bye) exits.`

func cmdChat(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("chat", "-m FILE [--system TEXT] [--save FILE] [--load FILE] [--json] [flags]", stderr)
	var mf modelFlags
	mf.register(fs)
	var sf samplingFlags
	sf.register(fs)
	system := fs.String("system", "", "system prompt")
	savePath := fs.String("save", "", "save the conversation to FILE at exit (and on /save)")
	loadPath := fs.String("load", "", "resume the conversation saved in FILE")
	tmpl := fs.String("chat-template", "", "chat format: a built-in name (chatml, llama3, ...) or a file holding a template (default: the model's)")
	n := fs.Int("n", 0, "most tokens per answer (0 = until the end of the turn or a full context)")
	asJSON := fs.Bool("json", false, "for scripts: read one message per line, print one JSON object per answer, no prompts")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	m, err := loadChatModel(&mf, *tmpl)
	if err != nil {
		return err
	}
	defer m.Close()

	c := &chatUI{m: m, out: stdout, errw: stderr, json: *asJSON, savePath: *savePath, loadPath: *loadPath,
		opts: qsf.GenerateOptions{MaxTokens: *n, Sampling: sf.options()}}
	if *system != "" {
		c.system = []qsf.Message{{Role: "system", Content: *system}}
	}
	if c.s, err = m.NewSession(); err != nil {
		return err
	}
	defer func() { c.s.Close() }()
	c.msgs = c.system
	if *loadPath != "" {
		if err := c.load(*loadPath); err != nil {
			return err
		}
	}
	err = c.loop(stdin)
	if *savePath != "" && len(c.msgs) > len(c.system) {
		if serr := c.save(*savePath); serr != nil && err == nil {
			err = serr
		}
	}
	return err
}

// loadChatModel loads the model of a chat command and checks that its chat
// format is known (override: the --chat-template value).
func loadChatModel(mf *modelFlags, override string) (*qsf.Model, error) {
	text, err := chatTemplateFlag(override)
	if err != nil {
		return nil, err
	}
	if mf.synthetic != "" && mf.path == "" && text == "" {
		text = "chatml" // random-weight demo models carry no template
	}
	m, err := mf.loadWith(func(cfg *qsf.Config) { cfg.ChatTemplate = text })
	if err != nil {
		return nil, err
	}
	if _, err := m.ChatFormat(); err != nil {
		m.Close()
		return nil, fmt.Errorf("%w (pass --chat-template NAME|FILE)", err)
	}
	return m, nil
}

// chatUI is one interactive (or --json) chat.
type chatUI struct {
	m         *qsf.Model
	s         *qsf.Session
	out, errw io.Writer
	json      bool
	opts      qsf.GenerateOptions

	system   []qsf.Message
	msgs     []qsf.Message
	last     qsf.ChatResult // the last answer
	lastTurn qsf.Stats
	savePath string
	loadPath string
}

// loop reads messages until the input ends, answering each; Ctrl-C
// (SIGINT) stops an answer, or discards the message being typed.
func (c *chatUI) loop(in io.Reader) error {
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(in)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt)
	defer signal.Stop(sigs)

	if !c.json {
		in := c.m.Info()
		f, _ := c.m.ChatFormat()
		fmt.Fprintf(c.out, "qsf chat: %s (%s), chat format %s, context %d tokens. /help for help.\n", in.Name, in.Architecture, f, in.ContextLength)
	}
	for {
		text, ok := c.read(lines, sigs)
		if !ok {
			if !c.json {
				fmt.Fprintln(c.out)
			}
			return nil
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		if strings.HasPrefix(text, "/") {
			if quit := c.command(text); quit {
				return nil
			}
			continue
		}
		c.answer(text, sigs)
	}
}

// read returns the next message: one line, lines joined by a trailing
// backslash, or the lines between two """ lines. Ctrl-C discards what was
// typed; ok is false at the end of the input.
func (c *chatUI) read(lines <-chan string, sigs <-chan os.Signal) (string, bool) {
	var parts []string
	block := false
	prompt := ">>> "
	for {
		if !c.json {
			fmt.Fprint(c.out, prompt)
		}
		select {
		case <-sigs:
			if !c.json {
				fmt.Fprintln(c.out, "\n(Ctrl-D or /bye exits)")
			}
			parts, block, prompt = nil, false, ">>> "
			continue
		case line, ok := <-lines:
			if !ok {
				return strings.Join(parts, "\n"), len(parts) > 0
			}
			switch {
			case strings.TrimSpace(line) == `"""`:
				if block {
					return strings.Join(parts, "\n"), true
				}
				block = true
			case block:
				parts = append(parts, line)
			case strings.HasSuffix(line, `\`):
				parts = append(parts, strings.TrimSuffix(line, `\`))
			default:
				return strings.Join(append(parts, line), "\n"), true
			}
			prompt = "... "
		}
	}
}

// answer sends a user message and streams the answer; a SIGINT stops it.
func (c *chatUI) answer(text string, sigs <-chan os.Signal) {
	c.msgs = append(c.msgs, qsf.Message{Role: "user", Content: text})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-done:
		}
	}()
	res, err := c.s.Chat(ctx, c.msgs, c.opts, func(t qsf.Token) error {
		if !c.json {
			_, err := io.WriteString(c.out, t.Text)
			return err
		}
		return nil
	})
	close(done)
	cancel()
	interrupted := errors.Is(err, context.Canceled)
	if err != nil && !interrupted {
		c.msgs = c.msgs[:len(c.msgs)-1]
		c.report(err)
		return
	}
	c.last, c.lastTurn = res, c.s.Stats()
	// The answer stays in the conversation, also when it was cut short.
	c.msgs = append(c.msgs, qsf.Message{Role: "assistant", Content: res.Text})
	reason := string(res.Reason)
	if interrupted {
		reason = "interrupted"
	}
	if c.json {
		json.NewEncoder(c.out).Encode(struct {
			Text         string `json:"text"`
			Tokens       []int  `json:"tokens"`
			StopReason   string `json:"stop_reason"`
			PromptTokens int    `json:"prompt_tokens"`
			CachedTokens int    `json:"cached_tokens"`
		}{res.Text, nonNil(res.Tokens), reason, len(res.PromptTokens), res.CachedTokens})
		return
	}
	if interrupted {
		fmt.Fprint(c.out, " [interrupted]")
	}
	fmt.Fprintln(c.out)
}

// command runs a /command and reports whether the chat ends.
func (c *chatUI) command(line string) bool {
	fields := strings.Fields(line)
	arg := strings.TrimSpace(strings.TrimPrefix(line, fields[0]))
	switch fields[0] {
	case "/bye", "/exit", "/quit":
		return true
	case "/help", "/?":
		c.say(chatHelp)
	case "/reset":
		c.s.Reset()
		c.msgs = c.system
		c.last, c.lastTurn = qsf.ChatResult{}, qsf.Stats{}
		c.say("new conversation")
	case "/save":
		path := firstNonEmpty(arg, c.savePath, c.loadPath)
		if path == "" {
			c.report(errors.New("/save FILE: no file (and no --save)"))
			break
		}
		if err := c.save(path); err != nil {
			c.report(err)
			break
		}
		c.say(fmt.Sprintf("saved %d messages, %d tokens to %s", len(c.msgs), c.s.Pos(), path))
	case "/load":
		path := firstNonEmpty(arg, c.loadPath, c.savePath)
		if path == "" {
			c.report(errors.New("/load FILE: no file (and no --load)"))
			break
		}
		if err := c.load(path); err != nil {
			c.report(err)
			break
		}
		c.say(fmt.Sprintf("loaded %d messages, %d tokens from %s", len(c.msgs), c.s.Pos(), path))
	case "/set":
		if err := c.set(fields[1:]); err != nil {
			c.report(err)
			break
		}
		c.say(fmt.Sprintf("answers: at most %d tokens (0 = no limit), temperature %g", c.opts.MaxTokens, c.opts.Sampling.Temperature))
	case "/stats":
		st := c.lastTurn
		if c.json {
			json.NewEncoder(c.out).Encode(map[string]any{"context_tokens": c.s.Pos(), "context_length": c.m.Info().ContextLength,
				"messages": len(c.msgs), "prompt_tokens": st.PromptTokens, "cached_tokens": c.last.CachedTokens,
				"generated_tokens": st.GeneratedTokens, "prefill_tok_s": st.PrefillTokensPerSecond(), "decode_tok_s": st.DecodeTokensPerSecond()})
			break
		}
		fmt.Fprintf(c.out, "context: %d of %d tokens, %d messages\nlast turn: %d prompt tokens evaluated (%d reused from the cache), %.1f tok/s; %d generated, %.1f tok/s\n",
			c.s.Pos(), c.m.Info().ContextLength, len(c.msgs), st.PromptTokens, c.last.CachedTokens,
			st.PrefillTokensPerSecond(), st.GeneratedTokens, st.DecodeTokensPerSecond())
	default:
		c.report(fmt.Errorf("unknown command %s (/help lists them)", fields[0]))
	}
	return false
}

// set changes a generation setting: "n N" (most tokens per answer) or
// "temp T".
func (c *chatUI) set(args []string) error {
	if len(args) != 2 {
		return errors.New("/set n N | /set temp T")
	}
	switch args[0] {
	case "n":
		v, err := strconv.Atoi(args[1])
		if err != nil || v < 0 {
			return fmt.Errorf("/set n: want a token count, not %q", args[1])
		}
		c.opts.MaxTokens = v
	case "temp":
		v, err := strconv.ParseFloat(args[1], 32)
		if err != nil || v < 0 {
			return fmt.Errorf("/set temp: want a temperature, not %q", args[1])
		}
		c.opts.Sampling.Temperature = float32(v)
	default:
		return fmt.Errorf("/set: unknown setting %q (n, temp)", args[0])
	}
	return nil
}

func (c *chatUI) save(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := c.s.Save(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (c *chatUI) load(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := c.s.Restore(f); err != nil {
		return err
	}
	c.msgs = c.s.Messages()
	c.last, c.lastTurn = qsf.ChatResult{}, qsf.Stats{}
	if len(c.msgs) == 0 {
		c.msgs = c.system
	}
	return nil
}

// say prints a command's message (a JSON object with --json).
func (c *chatUI) say(msg string) {
	if c.json {
		json.NewEncoder(c.out).Encode(map[string]string{"info": msg})
		return
	}
	fmt.Fprintln(c.out, msg)
}

// report prints an error and carries on.
func (c *chatUI) report(err error) {
	if c.json {
		json.NewEncoder(c.out).Encode(map[string]string{"error": err.Error()})
		return
	}
	fmt.Fprintf(c.out, "error: %s\n", oneLine(err.Error()))
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
