package server

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"

	"github.com/qsf-llm/qsf"
)

// modelObject is the model's entry in /v1/models.
func (s *Server) modelObject() map[string]any {
	return map[string]any{"id": s.name, "object": "model", "created": s.created, "owned_by": "qsf",
		"meta": map[string]any{"architecture": s.info.Architecture, "n_ctx": s.info.ContextLength,
			"n_embd": s.info.Embedding, "n_vocab": s.info.Vocab, "parallel": cap(s.pool.free)}}
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{s.modelObject()}})
}

func (s *Server) handleModel(w http.ResponseWriter, r *http.Request) {
	if id := r.PathValue("id"); id != s.name {
		s.writeError(w, r, errUnknownModel(id))
		return
	}
	writeJSON(w, http.StatusOK, s.modelObject())
}

// handleHealth answers 200 {"status":"ok"} while the server serves, 503
// {"status":"shutting down"} once it is closed. (The handler exists only
// once the model is loaded: qsf serve listens after loading.)
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	if s.closed.Load() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "shutting down"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "sessions": cap(s.pool.free), "busy": s.pool.busy()})
}

// maxEmbedInputs is the most texts one embeddings request may give.
const maxEmbedInputs = 64

// handleEmbeddings answers /v1/embeddings: for each input, the mean of its
// tokens' final hidden states, scaled to unit length (as llama-server
// and OpenAI's embeddings are), as floats or base64 of little-endian
// float32 (encoding_format).
func (s *Server) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model          string          `json:"model"`
		Input          json.RawMessage `json:"input"`
		EncodingFormat string          `json:"encoding_format"`
	}
	if err := decodeJSON(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.liftReadDeadline(w)
	if req.Model != "" && req.Model != s.name {
		s.writeError(w, r, errUnknownModel(req.Model))
		return
	}
	var inputs []string
	if err := json.Unmarshal(req.Input, &inputs); err != nil {
		var one string
		if err := json.Unmarshal(req.Input, &one); err != nil {
			s.writeError(w, r, badRequest("input: want a string or a list of strings"))
			return
		}
		inputs = []string{one}
	}
	switch {
	case len(inputs) == 0:
		s.writeError(w, r, badRequest("input: at least one text is required"))
		return
	case len(inputs) > maxEmbedInputs:
		s.writeError(w, r, badRequest("input: at most %d texts", maxEmbedInputs))
		return
	case req.EncodingFormat != "" && req.EncodingFormat != "float" && req.EncodingFormat != "base64":
		s.writeError(w, r, badRequest("encoding_format %q: want float or base64", req.EncodingFormat))
		return
	}
	tokens := 0
	for i, in := range inputs {
		n := len(s.m.Tokenize(in, qsf.TokenizeOptions{}))
		if n == 0 {
			s.writeError(w, r, badRequest("input[%d]: empty", i))
			return
		}
		if n > s.info.ContextLength {
			s.writeError(w, r, &apiError{http.StatusBadRequest, "invalid_request_error", "context_length_exceeded",
				"an input is longer than the context"})
			return
		}
		tokens += n
	}
	ctx := r.Context()
	sl, err := s.acquire(ctx, nil)
	if err != nil {
		if ctx.Err() == nil {
			s.writeError(w, r, err)
		}
		return
	}
	defer s.pool.release(sl)
	data := make([]any, len(inputs))
	for i, in := range inputs {
		v, err := sl.s.Embed(ctx, in)
		if err != nil {
			if ctx.Err() == nil {
				s.writeError(w, r, s.generationError(err))
			}
			return
		}
		normalize(v)
		var emb any = v
		if req.EncodingFormat == "base64" {
			b := make([]byte, 4*len(v))
			for j, x := range v {
				binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(x))
			}
			emb = base64.StdEncoding.EncodeToString(b)
		}
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": emb}
	}
	s.extendWrite(w)
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data, "model": s.name,
		"usage": map[string]any{"prompt_tokens": tokens, "total_tokens": tokens}})
}

// normalize scales v to unit Euclidean length (a zero vector stays).
func normalize(v []float32) {
	var sum float64
	for _, x := range v {
		sum += float64(float64(x) * float64(x))
	}
	if sum == 0 {
		return
	}
	inv := 1 / math.Sqrt(sum)
	for i, x := range v {
		v[i] = float32(float64(x) * inv)
	}
}

// handleTokenize answers /tokenize as llama-server does:
// {"content": TEXT, "add_special": BOOL, "with_pieces": BOOL} →
// {"tokens": [...]} (with pieces: [{"id":..,"piece":..}]).
func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Content      *string `json:"content"`
		AddSpecial   bool    `json:"add_special"`
		ParseSpecial bool    `json:"parse_special"`
		WithPieces   bool    `json:"with_pieces"`
	}
	if err := decodeJSON(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Content == nil {
		s.writeError(w, r, badRequest("content is required"))
		return
	}
	ids := s.m.Tokenize(*req.Content, qsf.TokenizeOptions{NoSpecial: !req.AddSpecial, ParseSpecial: req.ParseSpecial})
	if !req.WithPieces {
		writeJSON(w, http.StatusOK, map[string]any{"tokens": ids})
		return
	}
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = map[string]any{"id": id, "piece": s.m.Piece(id)}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": out})
}

// handleDetokenize answers /detokenize: {"tokens": [...]} →
// {"content": TEXT}.
func (s *Server) handleDetokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Tokens []int `json:"tokens"`
	}
	if err := decodeJSON(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	for i, id := range req.Tokens {
		if id < 0 || id >= s.info.Vocab {
			s.writeError(w, r, badRequest("tokens[%d]: %d is outside the vocabulary of %d", i, id, s.info.Vocab))
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"content": s.m.Detokenize(req.Tokens)})
}
