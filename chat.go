package qsf

import (
	"github.com/qsf-llm/qsf/chat"
)

// Message is one turn of a conversation: a role ("system", "user",
// "assistant") and its text.
type Message = chat.Message

// ErrUnknownTemplate is returned (wrapped) when a model's chat template is
// none of the formats package chat knows; the message names the fallback
// (chat.Fallback), which Config.ChatTemplate can select.
var ErrUnknownTemplate = chat.ErrUnknownTemplate

// ChatTemplate returns the model file's chat template
// (tokenizer.chat_template), or "" when it has none.
func (m *Model) ChatTemplate() string {
	s, _ := m.file.Metadata.String("tokenizer.chat_template")
	return s
}

// ChatFormat returns the chat format the model's conversations are
// written in: Config.ChatTemplate when set, otherwise the format
// recognised in the model's template.
func (m *Model) ChatFormat() (chat.Format, error) {
	if m.cfg.ChatTemplate != "" {
		return chat.Detect(m.cfg.ChatTemplate)
	}
	return chat.Detect(m.ChatTemplate())
}

// ApplyTemplate formats messages as the model expects a conversation, as
// llama.cpp's llama_chat_apply_template does, ending with the opening of
// the assistant's turn when addAssistant is set.
func (m *Model) ApplyTemplate(messages []Message, addAssistant bool) (string, error) {
	f, err := m.ChatFormat()
	if err != nil {
		return "", err
	}
	return chat.Apply(f, messages, addAssistant)
}
