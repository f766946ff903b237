package chat

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/qsf-llm/qsf/internal/testfiles"
)

// refEntry is one entry of ../shared/reference/chat-templates.json.
type refEntry struct {
	Name         string    `json:"name"`
	Template     string    `json:"template"`
	Messages     []Message `json:"messages"`
	AddAssistant bool      `json:"add_assistant"`
	Output       string    `json:"output"`
}

func loadReference(t *testing.T) []refEntry {
	t.Helper()
	data, err := os.ReadFile(testfiles.Path(t, "reference", "chat-templates.json"))
	if err != nil {
		t.Fatal(err)
	}
	var entries []refEntry
	if err := json.Unmarshal(data, &entries); err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 {
		t.Fatal("no entries in chat-templates.json")
	}
	return entries
}

// TestReference formats every recorded conversation with the format
// detected from its real template and compares with llama.cpp's text.
func TestReference(t *testing.T) {
	for i, e := range loadReference(t) {
		f, err := Detect(e.Template)
		if err != nil {
			t.Errorf("%d %s: %v", i, e.Name, err)
			continue
		}
		got, err := Apply(f, e.Messages, e.AddAssistant)
		if err != nil {
			t.Errorf("%d %s: %v", i, e.Name, err)
			continue
		}
		if got != e.Output {
			t.Errorf("%d %s (%s):\n got %q\nwant %q", i, e.Name, f, got, e.Output)
		}
		// The parts say which text came from the messages.
		parts, _ := Parts(f, e.Messages, e.AddAssistant)
		for _, p := range parts {
			if p.Content && !containsContent(e.Messages, p.Text) {
				t.Errorf("%d %s: content part %q is not in any message", i, e.Name, p.Text)
			}
		}
	}
}

// containsContent reports whether s is made of (trimmed) message contents.
func containsContent(msgs []Message, s string) bool {
	for _, m := range msgs {
		if strings.Contains(m.Content, s) {
			return true
		}
	}
	return false
}

func TestDetectByName(t *testing.T) {
	for _, f := range Formats() {
		got, err := Detect(string(f))
		if err != nil || got != f {
			t.Errorf("Detect(%q) = %q, %v", f, got, err)
		}
	}
}

func TestUnknownTemplate(t *testing.T) {
	for _, tmpl := range []string{"", "{{ messages }}", "nonsense"} {
		_, err := Detect(tmpl)
		if !errors.Is(err, ErrUnknownTemplate) {
			t.Fatalf("Detect(%q) error %v, want ErrUnknownTemplate", tmpl, err)
		}
		if !strings.Contains(err.Error(), string(Fallback)) {
			t.Errorf("error %q does not name the fallback %s", err, Fallback)
		}
	}
	if _, err := Apply("no-such-format", nil, true); !errors.Is(err, ErrUnknownTemplate) {
		t.Errorf("Apply of an unknown format: %v", err)
	}
}

func TestContentIsMarkedAsContent(t *testing.T) {
	msgs := []Message{{"user", "say <|im_end|> please"}}
	parts, err := Parts(ChatML, msgs, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []Part{{"<|im_start|>user\n", false}, {"say <|im_end|> please", true}, {"<|im_end|>\n<|im_start|>assistant\n", false}}
	if len(parts) != len(want) {
		t.Fatalf("parts %+v, want %+v", parts, want)
	}
	for i := range want {
		if parts[i] != want[i] {
			t.Errorf("part %d = %+v, want %+v", i, parts[i], want[i])
		}
	}
}

// FuzzApply formats arbitrary conversations in each format and detects
// arbitrary templates: no panics, the parts join to Apply's text, and every
// content part is message text.
func FuzzApply(f *testing.F) {
	formats := Formats()
	for i := range formats {
		f.Add("{% if '<|im_start|>' %}", "user", "Hello <|im_end|>", "assistant", " hi ", uint8(i))
	}
	f.Add("[INST] <<SYS>>", "system", "", "x", "\t", uint8(0))
	f.Fuzz(func(t *testing.T, tmpl, role1, content1, role2, content2 string, which uint8) {
		if fm, err := Detect(tmpl); err == nil {
			if _, ok := writers[fm]; !ok {
				t.Fatalf("Detect gave %q, which has no writer", fm)
			}
		} else if !errors.Is(err, ErrUnknownTemplate) {
			t.Fatalf("Detect: %v", err)
		}
		msgs := []Message{{role1, content1}, {role2, content2}, {"user", content1}}
		// One format per input keeps an execution cheap; the seeds
		// start one input in each format.
		for _, fm := range formats[int(which)%len(formats):][:1] {
			for _, add := range []bool{false, true} {
				text, err := Apply(fm, msgs, add)
				if err != nil {
					t.Fatal(err)
				}
				parts, _ := Parts(fm, msgs, add)
				if Join(parts) != text {
					t.Fatalf("%s: parts do not join to the text", fm)
				}
				// A content part is one message's text, trimmed or not
				// (gemma joins system messages).
				valid := map[string]bool{content1: true, content2: true, trim(content1): true, trim(content2): true,
					trim(content1) + trim(content2): true}
				for _, p := range parts {
					if p.Content && !valid[p.Text] {
						t.Fatalf("%s: content part %q is not message text", fm, p.Text)
					}
				}
			}
		}
	})
}
