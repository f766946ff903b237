package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/qsf-llm/qsf"
)

// generationRequest holds the fields of /v1/chat/completions and
// /v1/completions requests that QSF reads; other fields are ignored,
// except the ones named in unsupported, which are refused.
type generationRequest struct {
	Model    string          `json:"model"`
	Messages []chatMessage   `json:"messages"` // chat
	Prompt   json.RawMessage `json:"prompt"`   // completions: a string (or a list of one)

	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	TopK                *int            `json:"top_k"`
	MinP                *float64        `json:"min_p"`
	RepeatPenalty       *float64        `json:"repeat_penalty"`
	PresencePenalty     *float64        `json:"presence_penalty"`
	FrequencyPenalty    *float64        `json:"frequency_penalty"`
	Seed                *int64          `json:"seed"`
	Stop                json.RawMessage `json:"stop"`
	N                   *int            `json:"n"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Logprobs       json.RawMessage `json:"logprobs"` // chat: a boolean; completions: a number of alternatives
	TopLogprobs    *int            `json:"top_logprobs"`
	ResponseFormat *struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`

	Tools     json.RawMessage `json:"tools"`
	Functions json.RawMessage `json:"functions"`
	Echo      bool            `json:"echo"`
	BestOf    *int            `json:"best_of"`
	Suffix    *string         `json:"suffix"`
}

// chatMessage is one message of a chat request. Content is a string, null
// or a list of {"type":"text","text":...} parts.
type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// job is a validated generation request.
type job struct {
	chat         bool
	messages     []qsf.Message
	prompt       string
	opts         qsf.GenerateOptions
	stream       bool
	includeUsage bool
}

// maxStops is the most stop strings a request may give.
const maxStops = 16

// parseJob validates a request into a job. chat selects the endpoint.
func (s *Server) parseJob(req *generationRequest, chat bool) (*job, error) {
	if req.Model != "" && req.Model != s.name {
		return nil, errUnknownModel(req.Model)
	}
	j := &job{chat: chat, stream: req.Stream}
	if req.StreamOptions != nil {
		if !req.Stream {
			return nil, badRequest("stream_options is only allowed with stream: true")
		}
		j.includeUsage = req.StreamOptions.IncludeUsage
	}
	switch {
	case len(req.Tools) > 0 && string(req.Tools) != "null" || len(req.Functions) > 0 && string(req.Functions) != "null":
		return nil, badRequest("tools and functions are not supported")
	case req.Echo:
		return nil, badRequest("echo is not supported")
	case req.BestOf != nil && *req.BestOf != 1:
		return nil, badRequest("best_of must be 1")
	case req.Suffix != nil && *req.Suffix != "":
		return nil, badRequest("suffix is not supported")
	case req.N != nil && *req.N != 1:
		return nil, badRequest("n must be 1 (one choice per request)")
	}
	if chat {
		if len(req.Messages) == 0 {
			return nil, badRequest("messages: at least one message is required")
		}
		for i, msg := range req.Messages {
			m, err := parseMessage(msg)
			if err != nil {
				return nil, badRequest("messages[%d]: %v", i, err)
			}
			j.messages = append(j.messages, m)
		}
	} else {
		p, err := parsePrompt(req.Prompt)
		if err != nil {
			return nil, err
		}
		j.prompt = p
	}

	o := &j.opts
	o.MaxTokens = s.opts.MaxTokens
	for _, mt := range []*int{req.MaxTokens, req.MaxCompletionTokens} {
		if mt == nil {
			continue
		}
		if *mt < 1 || *mt > s.opts.MaxTokens {
			return nil, badRequest("max_tokens %d: want 1 to %d", *mt, s.opts.MaxTokens)
		}
		o.MaxTokens = *mt
	}
	sp := &o.Sampling
	sp.Temperature, sp.TopP, sp.Seed = 1, 1, -1 // OpenAI's defaults; a seed from the clock
	var bad []string
	setFloat := func(dst *float32, v *float64, name string, lo, hi float64) {
		if v == nil {
			return
		}
		if math.IsNaN(*v) || *v < lo || *v > hi {
			bad = append(bad, name)
			return
		}
		*dst = float32(*v)
	}
	setFloat(&sp.Temperature, req.Temperature, "temperature (0 to 2)", 0, 2)
	setFloat(&sp.TopP, req.TopP, "top_p (0 to 1)", 0, 1)
	setFloat(&sp.MinP, req.MinP, "min_p (0 to 1)", 0, 1)
	setFloat(&sp.RepeatPenalty, req.RepeatPenalty, "repeat_penalty (0 to 10)", 0, 10)
	setFloat(&sp.PresencePenalty, req.PresencePenalty, "presence_penalty (-2 to 2)", -2, 2)
	setFloat(&sp.FrequencyPenalty, req.FrequencyPenalty, "frequency_penalty (-2 to 2)", -2, 2)
	if req.TopK != nil {
		if *req.TopK < 0 {
			bad = append(bad, "top_k (0 or more)")
		}
		sp.TopK = *req.TopK
	}
	if len(bad) > 0 {
		return nil, badRequest("out of range: %s", strings.Join(bad, ", "))
	}
	if req.Seed != nil {
		sp.Seed = *req.Seed & math.MaxInt64
	}
	if err := sp.Validate(); err != nil {
		return nil, badRequest("%v", err)
	}
	stops, err := parseStop(req.Stop)
	if err != nil {
		return nil, err
	}
	o.Stop = stops
	if err := parseLogprobs(req, chat, o); err != nil {
		return nil, err
	}
	if rf := req.ResponseFormat; rf != nil {
		switch rf.Type {
		case "", "text":
		case "json_object":
			o.JSONSchema = []byte(`{"type":"object"}`)
		case "json_schema":
			if rf.JSONSchema == nil || len(rf.JSONSchema.Schema) == 0 {
				return nil, badRequest("response_format: json_schema.schema is required")
			}
			o.JSONSchema = rf.JSONSchema.Schema
		default:
			return nil, badRequest("response_format.type %q: want text, json_object or json_schema", rf.Type)
		}
	}
	return j, nil
}

// parseMessage reads one chat message.
func parseMessage(msg chatMessage) (qsf.Message, error) {
	role := msg.Role
	switch role {
	case "system", "user", "assistant":
	case "developer":
		role = "system"
	case "":
		return qsf.Message{}, errors.New("role is required")
	default:
		return qsf.Message{}, fmt.Errorf("role %q: want system, developer, user or assistant", msg.Role)
	}
	text, err := parseContent(msg.Content)
	if err != nil {
		return qsf.Message{}, err
	}
	return qsf.Message{Role: role, Content: text}, nil
}

// parseContent reads a message's content: a string, null, or a list of
// text parts.
func parseContent(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var text string
	if err := json.Unmarshal(raw, &text); err == nil {
		return text, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("content: want a string or a list of text parts")
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type != "text" {
			return "", fmt.Errorf("content part of type %q: only text is supported", p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// parsePrompt reads a completion prompt: a string or a list of one.
func parsePrompt(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", badRequest("prompt is required")
	}
	var p string
	if err := json.Unmarshal(raw, &p); err == nil {
		return p, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return "", badRequest("prompt: want a string")
	}
	if len(list) != 1 {
		return "", badRequest("prompt: want one string (got a list of %d)", len(list))
	}
	return list[0], nil
}

// parseStop reads stop: null, a string or a list of strings.
func parseStop(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		return []string{one}, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, badRequest("stop: want a string or a list of strings")
	}
	if len(list) > maxStops {
		return nil, badRequest("stop: at most %d strings", maxStops)
	}
	return list, nil
}

// parseLogprobs reads logprobs and top_logprobs: chat takes logprobs as a
// boolean and top_logprobs (0 to 20); completions take logprobs as the
// number of alternatives (0 to 5).
func parseLogprobs(req *generationRequest, chat bool, o *qsf.GenerateOptions) error {
	raw := req.Logprobs
	set := len(raw) > 0 && string(raw) != "null"
	if chat {
		if set {
			if err := json.Unmarshal(raw, &o.Logprobs); err != nil {
				return badRequest("logprobs: want a boolean")
			}
		}
		if req.TopLogprobs != nil {
			if *req.TopLogprobs < 0 || *req.TopLogprobs > 20 {
				return badRequest("top_logprobs %d: want 0 to 20", *req.TopLogprobs)
			}
			if !o.Logprobs {
				return badRequest("top_logprobs needs logprobs: true")
			}
			o.TopLogprobs = *req.TopLogprobs
		}
		return nil
	}
	if !set {
		return nil
	}
	var n int
	if err := json.Unmarshal(raw, &n); err != nil || n < 0 || n > 5 {
		return badRequest("logprobs: want a number from 0 to 5")
	}
	o.Logprobs, o.TopLogprobs = true, n
	return nil
}
