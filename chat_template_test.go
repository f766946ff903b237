package qsf_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/internal/testfiles"
)

// withChatTemplate writes a copy of stories260K-f32.gguf whose metadata
// carries tmpl as tokenizer.chat_template and returns its path.
func withChatTemplate(t *testing.T, dir, name, tmpl string) string {
	t.Helper()
	src, err := format.Open(testfiles.Path(t, "models", "gguf", "stories260K-f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	md := &format.Metadata{}
	for k, v := range src.Metadata.All() {
		md.Set(k, v)
	}
	md.Set("tokenizer.chat_template", format.StringValue(tmpl))
	tensors := make([]format.WriterTensor, len(src.Tensors))
	for i, ti := range src.Tensors {
		tensors[i] = format.WriterTensor{Name: ti.Name, Shape: ti.Shape, Type: ti.Type}
	}
	path := filepath.Join(dir, name+".gguf")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = format.WriteGGUF(f, md, tensors, func(i int, w io.Writer) error {
		data, err := src.TensorData(&src.Tensors[i])
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// TestModelApplyTemplateReference puts every template of the reference
// file into a model file and checks Model.ChatTemplate and
// Model.ApplyTemplate against llama.cpp's output, byte for byte.
func TestModelApplyTemplateReference(t *testing.T) {
	raw, err := os.ReadFile(testfiles.Path(t, "reference", "chat-templates.json"))
	if err != nil {
		t.Fatal(err)
	}
	var entries []struct {
		Name         string        `json:"name"`
		Template     string        `json:"template"`
		Messages     []qsf.Message `json:"messages"`
		AddAssistant bool          `json:"add_assistant"`
		Output       string        `json:"output"`
	}
	if err := json.Unmarshal(raw, &entries); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string]string{}
	for i, e := range entries {
		path, ok := files[e.Template]
		if !ok {
			path = withChatTemplate(t, dir, fmt.Sprint("model", len(files)), e.Template)
			files[e.Template] = path
		}
		m, err := qsf.Load(path, qsf.Config{Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		if m.ChatTemplate() != e.Template {
			t.Errorf("%d %s: ChatTemplate() did not return the file's template", i, e.Name)
		}
		got, err := m.ApplyTemplate(e.Messages, e.AddAssistant)
		m.Close()
		if err != nil {
			t.Errorf("%d %s: %v", i, e.Name, err)
			continue
		}
		if got != e.Output {
			t.Errorf("%d %s:\n got %q\nwant %q", i, e.Name, got, e.Output)
		}
	}

	// Config.ChatTemplate overrides the file's template.
	m, err := qsf.Load(files[entries[0].Template], qsf.Config{Threads: 1, ChatTemplate: "llama3"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	got, _ := m.ApplyTemplate([]qsf.Message{{Role: "user", Content: "hi"}}, false)
	if want := "<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>"; got != want {
		t.Errorf("override: %q, want %q", got, want)
	}
	// A model without a template: the error names the fallback.
	plain, err := qsf.Load(testfiles.Path(t, "models", "gguf", "stories260K-f32.gguf"), qsf.Config{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if plain.ChatTemplate() != "" {
		t.Errorf("stories260K has a chat template?")
	}
	if _, err := plain.ApplyTemplate(nil, true); !errors.Is(err, qsf.ErrUnknownTemplate) {
		t.Errorf("no template: %v, want ErrUnknownTemplate", err)
	}
}
