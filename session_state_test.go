package qsf_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/internal/testfiles"
)

var sessionConversation = []string{"Once upon a time", "Tell me about Lily.", "And the dog?"}

// chatTurns runs the user turns from turn `from` on in s, with msgs the
// conversation so far, and returns the answers' tokens.
func chatTurns(t *testing.T, s *qsf.Session, msgs []qsf.Message, from int) ([]qsf.Message, [][]int) {
	t.Helper()
	var answers [][]int
	for _, user := range sessionConversation[from:] {
		msgs = append(msgs, qsf.Message{Role: "user", Content: user})
		res, err := s.Chat(context.Background(), msgs, qsf.GenerateOptions{MaxTokens: 8, Sampling: qsf.SamplerOptions{Temperature: 0.9, Seed: 7}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		answers = append(answers, res.Tokens)
		msgs = append(msgs, qsf.Message{Role: "assistant", Content: res.Text})
	}
	return msgs, answers
}

// TestSessionSaveRestore saves a conversation after turn 2, restores it in
// a new process (this test binary run again) and checks that turn 3 gives
// the same tokens as without the restart.
func TestSessionSaveRestore(t *testing.T) {
	if os.Getenv("QSF_SESSION_CHILD") != "" {
		return // the child's work is in TestSessionRestoreChild
	}
	m := loadChatModel(t, "gguf/stories260K-f32.gguf", "llama2-sys", "")
	s, err := m.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sys := []qsf.Message{{Role: "system", Content: "You tell short stories."}}

	// Turns 1-2, save, turn 3: the reference.
	conv := sys
	for i := range 2 {
		conv = append(conv, qsf.Message{Role: "user", Content: sessionConversation[i]})
		res, err := s.Chat(context.Background(), conv, qsf.GenerateOptions{MaxTokens: 8, Sampling: qsf.SamplerOptions{Temperature: 0.9, Seed: 7}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		conv = append(conv, qsf.Message{Role: "assistant", Content: res.Text})
	}
	var saved bytes.Buffer
	if err := s.Save(&saved); err != nil {
		t.Fatal(err)
	}
	_, want := chatTurns(t, s, conv, 2)

	dir := t.TempDir()
	sessPath := filepath.Join(dir, "chat.session")
	convPath := filepath.Join(dir, "conv.json")
	os.WriteFile(sessPath, saved.Bytes(), 0o644)
	cj, _ := json.Marshal(conv)
	os.WriteFile(convPath, cj, 0o644)
	cmd := exec.Command(os.Args[0], "-test.run=^TestSessionRestoreChild$", "-test.v")
	cmd.Env = append(os.Environ(), "QSF_SESSION_CHILD="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	gotJSON, err := os.ReadFile(filepath.Join(dir, "answer.json"))
	if err != nil {
		t.Fatalf("child wrote no answer: %v\n%s", err, out)
	}
	var got []int
	json.Unmarshal(gotJSON, &got)
	if !slices.Equal(got, want[0]) {
		t.Errorf("turn 3 after restore in a new process %v, without restart %v", got, want[0])
	}
	t.Logf("turn 3: %v (session file %d bytes)", got, saved.Len())
}

// TestSessionRestoreChild is the new process of TestSessionSaveRestore.
func TestSessionRestoreChild(t *testing.T) {
	dir := os.Getenv("QSF_SESSION_CHILD")
	if dir == "" {
		t.Skip("run by TestSessionSaveRestore")
	}
	m := loadChatModel(t, "gguf/stories260K-f32.gguf", "llama2-sys", "")
	f, err := os.Open(filepath.Join(dir, "chat.session"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := m.LoadSession(f)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The conversation comes back with the session.
	var want []qsf.Message
	cj, _ := os.ReadFile(filepath.Join(dir, "conv.json"))
	json.Unmarshal(cj, &want)
	conv := s.Messages()
	if !slices.Equal(conv, want) {
		t.Fatalf("restored messages %q, saved %q", conv, want)
	}
	_, answers := chatTurns(t, s, conv, 2)
	if s.Stats().PromptTokens >= 40 {
		t.Errorf("restored session evaluated %d prompt tokens: the cache was not reused", s.Stats().PromptTokens)
	}
	out, _ := json.Marshal(answers[0])
	if err := os.WriteFile(filepath.Join(dir, "answer.json"), out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSessionFileErrors: a truncated or bit-flipped file and a session of
// another model each give their typed error.
func TestSessionFileErrors(t *testing.T) {
	m := loadChatModel(t, "gguf/stories260K-f32.gguf", "llama2-sys", "")
	s, err := m.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Chat(context.Background(), []qsf.Message{{Role: "user", Content: "Hi"}}, qsf.GenerateOptions{MaxTokens: 4}, nil); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := s.Save(&buf); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	if err := s.Restore(bytes.NewReader(data)); err != nil {
		t.Fatalf("restore of an intact file: %v", err)
	}
	pos := s.Pos()
	for _, cut := range []int{0, 5, 20, len(data) / 2, len(data) - 1} {
		if err := s.Restore(bytes.NewReader(data[:cut])); !errors.Is(err, qsf.ErrSessionCorrupt) {
			t.Errorf("truncated to %d bytes: %v, want ErrSessionCorrupt", cut, err)
		}
		if s.Pos() != pos {
			t.Errorf("failed restore changed the session: %d positions, had %d", s.Pos(), pos)
		}
	}
	for _, bit := range []int{8 * 9, 8 * 30, 8 * (len(data) / 2), 8*len(data) - 3} {
		flipped := bytes.Clone(data)
		flipped[bit/8] ^= 1 << (bit % 8)
		err := s.Restore(bytes.NewReader(flipped))
		if !errors.Is(err, qsf.ErrSessionCorrupt) && !errors.Is(err, qsf.ErrSessionVersion) {
			t.Errorf("bit %d flipped: %v, want ErrSessionCorrupt", bit, err)
		}
	}
	for _, other := range []string{"gguf/stories260K-Q8_0.gguf", "synthetic/synth-llama-f32.gguf"} {
		om := loadChatModel(t, other, "llama2-sys", "")
		if _, err := om.LoadSession(bytes.NewReader(data)); !errors.Is(err, qsf.ErrSessionMismatch) {
			t.Errorf("session of stories260K-f32 loaded into %s: %v, want ErrSessionMismatch", other, err)
		}
	}
	// The same model with another context length.
	path := testfiles.Path(t, "models", "gguf", "stories260K-f32.gguf")
	om, err := qsf.Load(path, qsf.Config{Threads: 1, ContextLength: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer om.Close()
	if _, err := om.LoadSession(bytes.NewReader(data)); !errors.Is(err, qsf.ErrSessionMismatch) {
		t.Errorf("session loaded with another context length: %v, want ErrSessionMismatch", err)
	}
}
