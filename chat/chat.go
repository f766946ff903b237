// Package chat formats conversations the way instruct models expect them,
// as llama.cpp's llama_chat_apply_template does: a model file carries its
// chat template (a Jinja string in tokenizer.chat_template), Detect
// recognises which of the built-in formats that string is, and Apply
// writes a conversation in that format.
//
// Like llama.cpp, the package is not a Jinja interpreter: it recognises the
// formats by marker substrings of the template and writes them with Go
// code, so any recognised template gives exactly llama.cpp's text. A
// template it does not recognise gives ErrUnknownTemplate; llama.cpp's
// tools then fall back to chatml, which callers can do explicitly by
// passing Fallback.
//
// The output follows llama.cpp b4748, the build the reference outputs come
// from (chatglm4's generation prompt, for one, has no newline there).
// Formats llama.cpp added after it (such as llama4 and smolvlm) are
// written as the current llama.cpp writes them.
package chat

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Message is one turn of a conversation.
type Message struct {
	// Role is "system", "user" or "assistant" (some formats know more,
	// e.g. "tool").
	Role string `json:"role"`
	// Content is the text of the turn, used verbatim: special-token text
	// in it is plain text.
	Content string `json:"content"`
}

// Format is a built-in chat format, named as llama.cpp names it
// ("chatml", "llama3", ...).
type Format string

// The built-in formats.
const (
	ChatML          Format = "chatml"
	Llama2          Format = "llama2"
	Llama2Sys       Format = "llama2-sys"
	Llama2SysBOS    Format = "llama2-sys-bos"
	Llama2SysStrip  Format = "llama2-sys-strip"
	MistralV1       Format = "mistral-v1"
	MistralV3       Format = "mistral-v3"
	MistralV3Tekken Format = "mistral-v3-tekken"
	MistralV7       Format = "mistral-v7"
	MistralV7Tekken Format = "mistral-v7-tekken"
	Phi3            Format = "phi3"
	Phi4            Format = "phi4"
	Falcon3         Format = "falcon3"
	Zephyr          Format = "zephyr"
	Monarch         Format = "monarch"
	Gemma           Format = "gemma"
	Orion           Format = "orion"
	OpenChat        Format = "openchat"
	Vicuna          Format = "vicuna"
	VicunaOrca      Format = "vicuna-orca"
	DeepSeek        Format = "deepseek"
	DeepSeek2       Format = "deepseek2"
	DeepSeek3       Format = "deepseek3"
	CommandR        Format = "command-r"
	Llama3          Format = "llama3"
	ChatGLM3        Format = "chatglm3"
	ChatGLM4        Format = "chatglm4"
	GLMEdge         Format = "glmedge"
	MiniCPM         Format = "minicpm"
	Exaone3         Format = "exaone3"
	Exaone4         Format = "exaone4"
	RWKVWorld       Format = "rwkv-world"
	Granite         Format = "granite"
	GigaChat        Format = "gigachat"
	Megrez          Format = "megrez"
	Yandex          Format = "yandex"
	Bailing         Format = "bailing"
	Llama4          Format = "llama4"
	SmolVLM         Format = "smolvlm"
)

// Fallback is the format llama.cpp's tools use when a model's template is
// not recognised (or it has none).
const Fallback = ChatML

// ErrUnknownTemplate is returned for a template string that is neither a
// format name nor recognised as one of the built-in formats.
var ErrUnknownTemplate = errors.New("chat: unknown chat template")

// Formats returns the names of the built-in formats, sorted.
func Formats() []Format {
	out := make([]Format, 0, len(writers))
	for f := range writers {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Detect returns the format of a chat template: tmpl itself when it is a
// format name, otherwise the format whose markers the template text
// contains, in the order llama.cpp's llm_chat_detect_template checks them.
// An unrecognised template gives an error wrapping ErrUnknownTemplate that
// names Fallback.
func Detect(tmpl string) (Format, error) {
	if _, ok := writers[Format(tmpl)]; ok {
		return Format(tmpl), nil
	}
	if f := detect(tmpl); f != "" {
		return f, nil
	}
	if tmpl == "" {
		return "", fmt.Errorf("%w: the model has no chat template; llama.cpp would fall back to %s", ErrUnknownTemplate, Fallback)
	}
	return "", fmt.Errorf("%w: template %.40q... is none of the %d built-in formats (chat.Formats); llama.cpp would fall back to %s",
		ErrUnknownTemplate, tmpl, len(writers), Fallback)
}

func names() string {
	var b strings.Builder
	for i, f := range Formats() {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(string(f))
	}
	return b.String()
}

// detect is llm_chat_detect_template: the first marker test that matches
// decides.
func detect(tmpl string) Format {
	has := func(s string) bool { return strings.Contains(tmpl, s) }
	switch {
	case has("<|im_start|>"):
		if has("<|im_sep|>") {
			return Phi4
		}
		if has("<end_of_utterance>") {
			return SmolVLM // <|im_start|> is its BOS, the rest is not chatml
		}
		return ChatML
	case strings.HasPrefix(tmpl, "mistral") || has("[INST]"):
		if has("[SYSTEM_PROMPT]") {
			return MistralV7
		}
		// Mistral's official v1, v3 and v3-tekken templates.
		if has("' [INST] ' + system_message") || has("[AVAILABLE_TOOLS]") {
			switch {
			case has(" [INST]"):
				return MistralV1
			case has(`"[INST]"`):
				return MistralV3Tekken
			}
			return MistralV3
		}
		switch {
		case has("content.strip()"):
			return Llama2SysStrip
		case has("bos_token + '[INST]"):
			return Llama2SysBOS
		case has("<<SYS>>"):
			return Llama2Sys
		}
		return Llama2
	case has("<|assistant|>") && has("<|end|>"):
		return Phi3
	case has("[gMASK]<sop>"):
		return ChatGLM4
	case has("<|assistant|>") && has("<|user|>"):
		if has("</s>") {
			return Falcon3
		}
		return GLMEdge
	case has("<|{{ item['role'] }}|>") && has("<|begin_of_image|>"):
		return GLMEdge
	case has("<|user|>") && has("<|endoftext|>"):
		return Zephyr
	case has("bos_token + message['role']"):
		return Monarch
	case has("<start_of_turn>"):
		return Gemma
	case has(`'\n\nAssistant: ' + eos_token`):
		return Orion
	case has("GPT4 Correct "):
		return OpenChat
	case has("USER: ") && has("ASSISTANT: "):
		if has("SYSTEM: ") {
			return VicunaOrca
		}
		return Vicuna
	case has("### Instruction:") && has("<|EOT|>"):
		return DeepSeek
	case has("<|START_OF_TURN_TOKEN|>") && has("<|USER_TOKEN|>"):
		return CommandR
	case has("<|start_header_id|>") && has("<|end_header_id|>"):
		return Llama3
	case has("[gMASK]sop"):
		return ChatGLM3
	case has("<用户>"):
		return MiniCPM
	case has("'Assistant: ' + message['content'] + eos_token"):
		return DeepSeek2
	case has("<｜Assistant｜>") && has("<｜User｜>") && has("<｜end▁of▁sentence｜>"):
		return DeepSeek3
	case has("[|system|]") && has("[|assistant|]") && has("[|endofturn|]"):
		if has("[|tool|]") {
			return Exaone4
		}
		return Exaone3
	case has("rwkv-world") || has(`{{- 'User: ' + message['content']|trim + '\n\n' -}}`):
		return RWKVWorld
	case has("<|start_of_role|>"):
		return Granite
	case has("message['role'] + additional_special_tokens[0] + message['content'] + additional_special_tokens[1]"):
		return GigaChat
	case has("<|role_start|>"):
		return Megrez
	case has(" Ассистент:"):
		return Yandex
	case has("<role>ASSISTANT</role>") && has("'HUMAN'"):
		return Bailing
	case has("<|header_start|>") && has("<|header_end|>"):
		return Llama4
	}
	return ""
}

// Part is a piece of formatted text: either the format's own markup, in
// which special-token text (such as "<|im_start|>") stands for the special
// token, or message content, which is plain text whatever it contains.
type Part struct {
	Text    string
	Content bool // the text comes from a message
}

// Apply formats messages in format f, adding the opening of an assistant
// turn at the end when addAssistant is set (and the format has one).
func Apply(f Format, messages []Message, addAssistant bool) (string, error) {
	parts, err := Parts(f, messages, addAssistant)
	if err != nil {
		return "", err
	}
	return Join(parts), nil
}

// Parts formats messages as Apply does and returns the text in pieces
// that say which text came from the messages, so that a tokenizer can
// match special tokens in the markup only.
func Parts(f Format, messages []Message, addAssistant bool) ([]Part, error) {
	w, ok := writers[f]
	if !ok {
		return nil, fmt.Errorf("%w: no format named %q; choose one of %s", ErrUnknownTemplate, f, names())
	}
	var b builder
	w(&b, messages, addAssistant)
	return b.parts, nil
}

// Join concatenates the text of parts.
func Join(parts []Part) string {
	n := 0
	for _, p := range parts {
		n += len(p.Text)
	}
	var sb strings.Builder
	sb.Grow(n)
	for _, p := range parts {
		sb.WriteString(p.Text)
	}
	return sb.String()
}

// builder collects parts, merging neighbouring markup (each message's
// content stays a part of its own).
type builder struct{ parts []Part }

func (b *builder) add(s string, content bool) {
	if s == "" {
		return
	}
	if n := len(b.parts); n > 0 && !content && !b.parts[n-1].Content {
		b.parts[n-1].Text += s
		return
	}
	b.parts = append(b.parts, Part{Text: s, Content: content})
}

// markup adds text of the format itself.
func (b *builder) markup(s ...string) {
	for _, x := range s {
		b.add(x, false)
	}
}

// content adds message text.
func (b *builder) content(s string) { b.add(s, true) }

// trim removes C isspace characters from both ends of s, as llama.cpp's
// trim.
func trim(s string) string {
	isSpace := func(c byte) bool { return c == ' ' || (c >= '\t' && c <= '\r') }
	i, j := 0, len(s)
	for i < j && isSpace(s[i]) {
		i++
	}
	for j > i && isSpace(s[j-1]) {
		j--
	}
	return s[i:j]
}
