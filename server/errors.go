package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// apiError is an error answered to the client as an OpenAI error object:
// {"error":{"message":...,"type":...,"code":...}} with an HTTP status.
type apiError struct {
	status  int
	typ     string
	code    string
	message string
}

func (e *apiError) Error() string { return e.message }

// badRequest is a 400 invalid_request_error.
func badRequest(format string, args ...any) *apiError {
	return &apiError{http.StatusBadRequest, "invalid_request_error", "invalid_request", fmt.Sprintf(format, args...)}
}

var (
	errUnauthorized = &apiError{http.StatusUnauthorized, "invalid_request_error", "invalid_api_key",
		"missing or wrong API key: send the header Authorization: Bearer KEY"}
	errQueueFull = &apiError{http.StatusTooManyRequests, "server_busy", "queue_full",
		"every session is busy and the queue is full: retry later"}
	errTooLarge = &apiError{http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large",
		"the request body is too large"}
	errInternal = &apiError{http.StatusInternalServerError, "server_error", "internal_error",
		"the server failed to answer this request"}
	errShuttingDown = &apiError{http.StatusServiceUnavailable, "server_error", "shutting_down",
		"the server is shutting down"}
)

// errNotFound is the answer for a path the server does not serve.
func errNotFound(path string) *apiError {
	return &apiError{http.StatusNotFound, "invalid_request_error", "not_found", fmt.Sprintf("no such endpoint: %s", path)}
}

// errUnknownModel is the answer for a model name the server does not
// serve.
func errUnknownModel(name string) *apiError {
	return &apiError{http.StatusNotFound, "invalid_request_error", "model_not_found",
		fmt.Sprintf("the model %q does not exist (see GET /v1/models)", name)}
}

// writeError answers err: an *apiError as itself, anything else as a
// 500 without its details (they go to the log).
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		s.log.ErrorContext(r.Context(), "request failed", "path", r.URL.Path, "err", err)
		ae = errInternal
	}
	if ae.status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, ae.status, map[string]any{"error": map[string]any{"message": ae.message, "type": ae.typ, "code": ae.code}})
}

// writeJSON answers v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"message":"the server failed to encode its answer","type":"server_error","code":"internal_error"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// decodeJSON reads the request body into v, answering the errors a
// client can make (malformed JSON, a wrong type, a body too large) as
// *apiError.
func decodeJSON(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(v); err != nil {
		var tooLarge *http.MaxBytesError
		var typeErr *json.UnmarshalTypeError
		var syntaxErr *json.SyntaxError
		switch {
		case errors.As(err, &tooLarge):
			return errTooLarge
		case errors.As(err, &typeErr):
			return badRequest("field %q: got a JSON %s, want %s", typeErr.Field, typeErr.Value, jsonKind(typeErr.Type.Kind().String()))
		case errors.As(err, &syntaxErr):
			return badRequest("malformed JSON at byte %d: %v", syntaxErr.Offset, syntaxErr)
		default:
			return badRequest("malformed JSON body: %v", err)
		}
	}
	if dec.More() {
		return badRequest("malformed JSON body: more than one value")
	}
	return nil
}

// jsonKind names a Go kind as the JSON type it decodes from.
func jsonKind(kind string) string {
	switch kind {
	case "int", "int64", "int32", "float32", "float64", "uint", "uint64":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "struct", "map":
		return "an object"
	}
	return kind
}
