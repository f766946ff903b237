package qsf

import (
	"context"
	"errors"
	"slices"

	"github.com/qsf-llm/qsf/chat"
	"github.com/qsf-llm/qsf/tokenizer"
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

// TokenizeChat formats messages with the model's chat format and converts
// the text to token ids: special-token text in the format's markup (such
// as "<|im_start|>") becomes the special token, while message contents are
// plain text (a user typing "<|im_end|>" does not end the turn). BOS is
// added as the vocabulary asks.
func (m *Model) TokenizeChat(messages []Message, addAssistant bool) ([]int, error) {
	f, err := m.ChatFormat()
	if err != nil {
		return nil, err
	}
	return m.tokenizeChat(f, messages, addAssistant)
}

func (m *Model) tokenizeChat(f chat.Format, messages []Message, addAssistant bool) ([]int, error) {
	parts, err := chat.Parts(f, messages, addAssistant)
	if err != nil {
		return nil, err
	}
	segs := make([]tokenizer.Segment, len(parts))
	for i, p := range parts {
		segs[i] = tokenizer.Segment{Text: p.Text, ParseSpecial: !p.Content}
	}
	return m.tok.EncodeSegments(segs, true), nil
}

// ChatResult summarizes a Chat call.
type ChatResult struct {
	// Result is the answer. Its PromptTokens are the prompt tokens that
	// were evaluated: those after the ones reused from the KV cache.
	Result
	// CachedTokens is the number of prompt tokens reused from the KV
	// cache instead of being evaluated again.
	CachedTokens int
}

// Chat answers a conversation: it formats messages with the model's chat
// format (see Model.ChatFormat), opens the assistant's turn and generates
// the answer, passing each token to fn as Generate does. It stops at an
// end-of-generation token or at the format's end of turn (such as
// <|im_end|> or <|eot_id|>), besides opts' limits.
//
// The session keeps what it evaluated: when messages continue the
// conversation of the previous call (the same messages, the answer, a new
// user turn), only the new tokens are evaluated; otherwise the longest
// common token prefix with the KV cache is kept and the rest evaluated
// again (llama.cpp's prompt cache). Append the answer (Result.Text) as an
// "assistant" message before the next user turn.
func (s *Session) Chat(ctx context.Context, messages []Message, opts GenerateOptions, fn func(Token) error) (ChatResult, error) {
	if s.closed {
		return ChatResult{}, ErrClosed
	}
	if len(messages) == 0 {
		return ChatResult{}, errors.New("qsf: Chat with no messages")
	}
	f, err := s.m.ChatFormat()
	if err != nil {
		return ChatResult{}, err
	}
	ids, err := s.m.tokenizeChat(f, messages, true)
	if err != nil {
		return ChatResult{}, err
	}
	keep := s.reuse(ids)
	var stops []string
	opts.endOfTurn, stops = s.m.endOfTurn(f)
	opts.Stop = append(slices.Clip(opts.Stop), stops...)
	opts.seen = ids[:keep] // the penalties see the whole prompt, cached or not
	res, err := s.generate(ctx, ids[keep:], opts, fn)
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		// The answer, as far as it got, is part of the conversation.
		s.messages = append(slices.Clone(messages), Message{Role: "assistant", Content: res.Text})
	} else {
		s.messages = nil
	}
	return ChatResult{Result: res, CachedTokens: keep}, err
}

// endOfTurn returns what ends the model's turn in format f: the tokens
// (control tokens of the vocabulary) and, for end texts that are not one,
// stop strings.
func (m *Model) endOfTurn(f chat.Format) (ids []int, stops []string) {
	for _, text := range chat.EndOfTurn(f) {
		if id, ok := m.tok.Lookup(text); ok && m.tok.TokenType(id) == tokenizer.TypeControl {
			ids = append(ids, id)
		} else {
			stops = append(stops, text)
		}
	}
	return ids, stops
}

// Messages returns the conversation of the session's last Chat call, its
// answer (as far as it got) included, or of the session Restore loaded;
// nil after Reset or when the session has not chatted.
func (s *Session) Messages() []Message { return slices.Clone(s.messages) }

// reuse keeps the longest prefix of ids that the session has evaluated
// (at least one token is left to evaluate, for the logits) and returns its
// length; the KV cache is truncated to it and the pending token dropped
// (when it matches, it is the first token evaluated).
func (s *Session) reuse(ids []int) int {
	p := 0
	for p < len(s.history) && p < len(ids) && s.history[p] == ids[p] {
		p++
	}
	p = min(p, len(ids)-1)
	s.pending = -1
	if p < s.Pos() {
		// A quantized cache keeps only what it holds exactly, so that the
		// result equals a fresh session's.
		p = s.state.KV.ExactPrefix(p)
		if err := s.state.KV.Truncate(p); err != nil {
			s.Reset() // the cache evicted positions: start again
			return 0
		}
		s.history = s.history[:p]
	}
	return p
}

// record notes that ids were fed to the model: the tokens the KV cache
// now holds (all of them, or a prefix when the feed stopped early).
func (s *Session) record(ids []int) {
	s.history = append(s.history, ids...)
	if n := s.Pos(); len(s.history) > n {
		s.history = s.history[:n]
	}
}
