package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/qsf-llm/qsf/chat"
	"github.com/qsf-llm/qsf/format"
)

func cmdTemplate(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("template", "(-m FILE | --chat-template NAME|FILE) --messages FILE.json [--add-assistant]", stderr)
	path := fs.String("m", "", "model file whose tokenizer.chat_template to use")
	override := fs.String("chat-template", "", "a built-in format name or a file holding a template; overrides the model's. Formats: "+formatNames())
	messages := fs.String("messages", "", `JSON file with a list of {"role": ..., "content": ...}`)
	addAssistant := fs.Bool("add-assistant", false, "end with the opening of the assistant's turn")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if *messages == "" {
		return usagef("no conversation: pass --messages FILE.json")
	}
	tmpl, err := templateText(*path, *override)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(*messages)
	if err != nil {
		return err
	}
	var msgs []chat.Message
	if err := json.Unmarshal(data, &msgs); err != nil {
		return fmt.Errorf("%s: want a JSON list of {\"role\", \"content\"}: %w", *messages, err)
	}
	f, err := chat.Detect(tmpl)
	if err != nil {
		return err
	}
	text, err := chat.Apply(f, msgs, *addAssistant)
	if err != nil {
		return err
	}
	_, err = io.WriteString(stdout, text)
	return err
}

// templateText returns the chat template a command should use: the
// --chat-template value (a format name, or the text of the file it names)
// when given, otherwise the tokenizer.chat_template of the model file.
func templateText(modelPath, override string) (string, error) {
	if override != "" {
		return chatTemplateFlag(override)
	}
	if modelPath == "" {
		return "", usagef("no template: pass -m FILE or --chat-template NAME|FILE")
	}
	f, err := format.OpenWith(modelPath, format.OpenOptions{NoMmap: true})
	if err != nil {
		return "", err
	}
	defer f.Close()
	s, _ := f.Metadata.String("tokenizer.chat_template")
	return s, nil
}

// chatTemplateFlag resolves a --chat-template value: a built-in format
// name stays as it is; anything else names a file holding a template.
func chatTemplateFlag(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	for _, f := range chat.Formats() {
		if string(f) == v {
			return v, nil
		}
	}
	data, err := os.ReadFile(v)
	if err != nil {
		return "", usagef("--chat-template %q is neither a built-in format (see qsf template --help) nor a readable file: %v", v, err)
	}
	return string(data), nil
}

// formatNames lists the built-in chat formats.
func formatNames() string {
	var names []string
	for _, f := range chat.Formats() {
		names = append(names, string(f))
	}
	return strings.Join(names, ", ")
}
