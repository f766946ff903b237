package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/qsf-llm/qsf/internal/testfiles"
)

// TestMain lets the test binary act as the qsf command (for the terminal
// test, which runs it in tmux) when QSF_RUN_MAIN is set.
func TestMain(m *testing.M) {
	if os.Getenv("QSF_RUN_MAIN") != "" {
		os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestChatJSON drives qsf chat --json through its input: two turns (the
// second reusing the cache), /save, /reset, /load, /stats.
func TestChatJSON(t *testing.T) {
	model := testfiles.Path(t, "models", "gguf", "stories260K-f32.gguf")
	sess := filepath.Join(t.TempDir(), "chat.session")
	stdin = strings.NewReader("Once upon a time\nTell me about \\\nLily.\n/save\n/reset\n/load\n/stats\n")
	defer func() { stdin = os.Stdin }()
	var out, errb bytes.Buffer
	code := runMain([]string{"chat", "-m", model, "--chat-template", "llama2-sys", "--temp", "0", "-n", "8", "--threads", "1",
		"--json", "--save", sess, "--system", "You tell stories."}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var lines []map[string]any
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var v map[string]any
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("not JSON: %q", sc.Text())
		}
		lines = append(lines, v)
	}
	if len(lines) != 6 {
		t.Fatalf("%d output lines, want 6: %s", len(lines), out.String())
	}
	first, second := lines[0], lines[1]
	if first["stop_reason"] != "max_tokens" || first["cached_tokens"].(float64) != 0 {
		t.Errorf("first answer %v", first)
	}
	// Turn 2 evaluates only what follows turn 1 (its answer included).
	if c := second["cached_tokens"].(float64); c < first["prompt_tokens"].(float64) {
		t.Errorf("second answer reused %v tokens, the first evaluated %v", c, first["prompt_tokens"])
	}
	if !strings.Contains(fmt.Sprint(lines[2]["info"]), "saved 5 messages") || !strings.Contains(fmt.Sprint(lines[4]["info"]), "loaded 5 messages") {
		t.Errorf("save/load: %v / %v", lines[2], lines[4])
	}
	if lines[5]["messages"].(float64) != 5 || lines[5]["context_tokens"].(float64) == 0 {
		t.Errorf("stats after /load: %v", lines[5])
	}
	if st, err := os.Stat(sess); err != nil || st.Size() == 0 {
		t.Errorf("no session file at exit: %v", err)
	}
}

// tmuxPane is a program running in a tmux pane of its own server.
type tmuxPane struct {
	t      *testing.T
	socket string
}

func (p *tmuxPane) tmux(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", p.socket}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %v: %v: %s", args, err, out)
	}
	return string(out)
}

// screen returns the pane's whole history and screen.
func (p *tmuxPane) screen() string {
	return p.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "chat")
}

// waitFor waits until the screen matches re at least n times.
func (p *tmuxPane) waitFor(re string, n int) string {
	p.t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(60 * time.Second)
	for {
		s := p.screen()
		if len(rx.FindAllStringIndex(s, -1)) >= n {
			return s
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("timed out waiting for %d× %q; screen:\n%s", n, re, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// send types keys into the pane (tmux send-keys syntax: "Enter", "C-c").
func (p *tmuxPane) send(keys ...string) {
	p.t.Helper()
	p.tmux(append([]string{"send-keys", "-t", "chat"}, keys...)...)
}

// TestChatTerminal runs qsf chat in a real terminal (tmux): two turns,
// /save, Ctrl-C during a long answer (the program goes on), /load and
// Ctrl-D, asserting on the captured screen.
func TestChatTerminal(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed: the terminal test needs it (apt-get install tmux)")
	}
	if testing.Short() {
		t.Skip("terminal test skipped in -short mode")
	}
	model := testfiles.Path(t, "models", "gguf", "stories260K-f32.gguf")
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &tmuxPane{t: t, socket: filepath.Join(dir, "tmux.sock")}
	sess := filepath.Join(dir, "chat.session")
	// The shell prints the exit status: tmux's #{pane_dead_status} is
	// sometimes empty when the pty closes before the process is reaped.
	// Its trap keeps the Ctrl-Cs sent to the terminal from ending it
	// (a trap, unlike an ignored signal, is not inherited by qsf).
	cmd := fmt.Sprintf("trap true INT; env QSF_RUN_MAIN=1 %q chat -m %q --chat-template llama2-sys --temp 0 -n 12 --ctx 4096 --threads 1 --save %q --system 'You tell stories.'; echo \"[exit status $?]\"",
		exe, model, sess)
	p.tmux("-f", "/dev/null", "new-session", "-d", "-s", "chat", "-x", "160", "-y", "50", "sh", "-c", cmd)
	defer exec.Command("tmux", "-S", p.socket, "kill-server").Run()
	p.tmux("set-option", "-t", "chat", "remain-on-exit", "on")

	p.waitFor(`(?m)^>>> $`, 1)
	p.send("Once upon a time", "Enter")
	p.waitFor(`(?m)^>>> `, 2)
	p.send("Tell me about Lily.", "Enter")
	p.waitFor(`(?m)^>>> `, 3)
	p.send("/save", "Enter")
	p.waitFor(`saved 5 messages, \d+ tokens`, 1)
	p.send("/stats", "Enter")
	saved := p.waitFor(`context: \d+ of 4096 tokens, 5 messages`, 1)
	ctxSaved := regexp.MustCompile(`context: (\d+) of 4096 tokens, 5 messages`).FindStringSubmatch(saved)[1]

	// A long answer (no token limit: thousands of tokens), stopped by Ctrl-C.
	p.send("/set n 0", "Enter")
	p.waitFor(`answers: at most 0 tokens`, 1)
	p.send("And the dog?", "Enter")
	p.waitFor(`>>> And the dog\?\n\S`, 1) // the answer is streaming
	p.send("C-c")
	p.waitFor(`\[interrupted\]`, 1)
	p.send("/stats", "Enter")
	p.waitFor(`context: \d+ of 4096 tokens, 7 messages`, 1)
	// Ctrl-C at the prompt discards the line being typed, not the program.
	p.send("half a line")
	p.send("C-c")
	p.waitFor(`\(Ctrl-D or /bye exits\)`, 1)

	p.send("/load", "Enter")
	p.waitFor(`loaded 5 messages, `+ctxSaved+` tokens`, 1)
	p.send("/stats", "Enter")
	p.waitFor(`context: `+ctxSaved+` of 4096 tokens, 5 messages`, 1)
	p.send("C-d")
	p.waitFor(`\[exit status 0\]`, 1)
	screen := p.screen()
	t.Logf("screen:\n%s", screen)
	// Two answers streamed after the first two messages, the third cut
	// short, and the chat going on after it.
	for _, re := range []string{
		`(?m)^>>> Once upon a time\n\S.*\n>>> Tell me about Lily\.\n(?s:.+)\n>>> /save\n`,
		`\[interrupted\]\n>>> /stats\ncontext: `,
		`>>> \n\[exit status 0\]`,
	} {
		if !regexp.MustCompile(re).MatchString(screen) {
			t.Errorf("screen does not match %q", re)
		}
	}
	if st, err := os.Stat(sess); err != nil || st.Size() == 0 {
		t.Errorf("no session file written at exit: %v", err)
	}
}

// TestRunChat: qsf run --chat sends the prompt through the chat template.
func TestRunChat(t *testing.T) {
	model := testfiles.Path(t, "models", "gguf", "stories260K-f32.gguf")
	var out, errb bytes.Buffer
	code := runMain([]string{"run", "--chat", "-m", model, "--chat-template", "llama2-sys", "--system", "Be kind.",
		"-p", "Hello", "--temp", "0", "-n", "4", "--json", "--threads", "1"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var res struct {
		PromptTokens []int `json:"prompt_tokens"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	// "[INST] <<SYS>>\nBe kind.\n<</SYS>>\n\nHello [/INST]" with BOS.
	var tok bytes.Buffer
	if code := runMain([]string{"tokenize", "-m", model, "[INST] <<SYS>>\nBe kind.\n<</SYS>>\n\nHello [/INST]"}, &tok, &errb); code != 0 {
		t.Fatal(errb.String())
	}
	if got, want := fmt.Sprint(res.PromptTokens), strings.ReplaceAll(strings.TrimSpace(tok.String()), ",", " "); got != want {
		t.Errorf("run --chat prompt tokens %s, want %s", got, want)
	}
	// Without a template (and no --chat-template) the error names the fallback.
	errb.Reset()
	if code := runMain([]string{"run", "--chat", "-m", model, "-p", "Hello"}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "chatml") {
		t.Errorf("model without template: exit %d: %s", code, errb.String())
	}
}

// TestChatReadMultiLine: a trailing backslash continues a line, """ opens
// and closes a block, Ctrl-C discards what was typed.
func TestChatReadMultiLine(t *testing.T) {
	c := &chatUI{out: &bytes.Buffer{}}
	lines := make(chan string, 16)
	sigs := make(chan os.Signal, 1)
	for _, l := range []string{`one \`, "two", `"""`, "a", "", "b", `"""`, "plain"} {
		lines <- l
	}
	close(lines)
	for _, want := range []string{"one \ntwo", "a\n\nb", "plain"} {
		got, ok := c.read(lines, sigs)
		if !ok || got != want {
			t.Errorf("read %q (%v), want %q", got, ok, want)
		}
	}
	if _, ok := c.read(lines, sigs); ok {
		t.Error("read past the end of the input")
	}

	// Ctrl-C after a continued line discards it.
	lines = make(chan string, 4)
	lines <- `half \`
	go func() {
		for len(lines) > 0 {
			time.Sleep(time.Millisecond)
		}
		sigs <- os.Interrupt
		for len(sigs) > 0 {
			time.Sleep(time.Millisecond)
		}
		lines <- "fresh"
		close(lines)
	}()
	if got, _ := c.read(lines, sigs); got != "fresh" {
		t.Errorf("after Ctrl-C: read %q, want \"fresh\"", got)
	}
}
