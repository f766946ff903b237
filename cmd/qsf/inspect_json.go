package main

import (
	"encoding/json"
	"io"
	"math"

	"github.com/qsf-llm/qsf/format"
)

// maxJSONArray is the longest metadata array inspect --json prints in
// full; a longer one (a vocabulary) is summarized by its type and length.
const maxJSONArray = 256

// inspectJSON writes a model file's format, metadata and tensors as one
// JSON object.
func inspectJSON(w io.Writer, path string, f *format.File) error {
	type tensor struct {
		Name   string   `json:"name"`
		Type   string   `json:"type"`
		Shape  []uint64 `json:"shape"`
		Offset uint64   `json:"offset"`
		Bytes  uint64   `json:"bytes"`
	}
	out := struct {
		File        string         `json:"file"`
		Format      string         `json:"format"`
		Version     uint32         `json:"version"`
		Bytes       int64          `json:"bytes"`
		Metadata    map[string]any `json:"metadata"`
		Tensors     []tensor       `json:"tensors"`
		TensorBytes uint64         `json:"tensor_bytes"`
	}{File: path, Format: "GGUF", Version: f.Version, Bytes: f.Size(), Metadata: map[string]any{}, Tensors: []tensor{}}
	if q := f.QSF(); q != nil {
		out.Format, out.Version = "QSF", uint32(q.Header.Version)
	}
	for key, v := range f.Metadata.All() {
		out.Metadata[key] = jsonValue(v)
	}
	for _, t := range f.Tensors {
		out.Tensors = append(out.Tensors, tensor{t.Name, t.Type.String(), t.Shape, t.Offset, t.Size})
		out.TensorBytes += t.Size
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// jsonValue converts a metadata value to a JSON-encodable one.
func jsonValue(v format.Value) any {
	if v.Type() == format.TypeArray {
		n := v.Len()
		if n > maxJSONArray {
			return map[string]any{"array_of": v.ElemType().String(), "len": n}
		}
		a := make([]any, n)
		for i := range a {
			a[i] = jsonValue(v.Index(i))
		}
		return a
	}
	if s, ok := v.Str(); ok {
		return s
	}
	if b, ok := v.Bool(); ok {
		return b
	}
	if x, ok := v.Uint(); ok {
		return x
	}
	if x, ok := v.Int(); ok {
		return x
	}
	if x, ok := v.Float(); ok && !math.IsNaN(x) && !math.IsInf(x, 0) {
		return x
	}
	return v.String()
}
