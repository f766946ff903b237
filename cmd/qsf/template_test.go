package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qsf-llm/qsf/chat"
	"github.com/qsf-llm/qsf/internal/testfiles"
)

// TestTemplateCommandMatchesLlamaCpp runs qsf template over every entry of
// the reference file, the template given as a file, and compares the
// printed text with llama.cpp's byte for byte.
func TestTemplateCommandMatchesLlamaCpp(t *testing.T) {
	raw, err := os.ReadFile(testfiles.Path(t, "reference", "chat-templates.json"))
	if err != nil {
		t.Fatal(err)
	}
	var entries []struct {
		Name         string            `json:"name"`
		Template     string            `json:"template"`
		Messages     []json.RawMessage `json:"messages"`
		AddAssistant bool              `json:"add_assistant"`
		Output       string            `json:"output"`
	}
	if err := json.Unmarshal(raw, &entries); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i, e := range entries {
		tmpl := filepath.Join(dir, "template.jinja")
		msgs := filepath.Join(dir, "messages.json")
		mj, _ := json.Marshal(e.Messages)
		if err := os.WriteFile(tmpl, []byte(e.Template), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(msgs, mj, 0o644); err != nil {
			t.Fatal(err)
		}
		args := []string{"template", "--chat-template", tmpl, "--messages", msgs}
		if e.AddAssistant {
			args = append(args, "--add-assistant")
		}
		var out, errb bytes.Buffer
		if code := runMain(args, &out, &errb); code != 0 {
			t.Errorf("%d %s: exit %d: %s", i, e.Name, code, errb.String())
			continue
		}
		if out.String() != e.Output {
			t.Errorf("%d %s:\n got %q\nwant %q", i, e.Name, out.String(), e.Output)
		}
	}
}

func TestTemplateCommandByNameAndErrors(t *testing.T) {
	dir := t.TempDir()
	msgs := filepath.Join(dir, "m.json")
	os.WriteFile(msgs, []byte(`[{"role":"user","content":"hi"}]`), 0o644)
	var out, errb bytes.Buffer
	if code := runMain([]string{"template", "--chat-template", "llama3", "--messages", msgs, "--add-assistant"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	want := "<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
	if out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
	// An unknown template is an error naming the fallback.
	tmpl := filepath.Join(dir, "t.jinja")
	os.WriteFile(tmpl, []byte("{{ messages }}"), 0o644)
	out.Reset()
	errb.Reset()
	if code := runMain([]string{"template", "--chat-template", tmpl, "--messages", msgs}, &out, &errb); code != 1 {
		t.Fatalf("unknown template: exit %d, want 1", code)
	}
	if !strings.Contains(errb.String(), string(chat.Fallback)) {
		t.Errorf("error %q does not name the fallback", errb.String())
	}
	// A model without a template (stories260K) says so.
	model := testfiles.Path(t, "models", "gguf", "stories260K-f32.gguf")
	errb.Reset()
	if code := runMain([]string{"template", "-m", model, "--messages", msgs}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "no chat template") {
		t.Errorf("model without template: exit %d, %q", code, errb.String())
	}
}
