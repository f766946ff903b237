package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
)

func cmdLogits(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("logits", "-m FILE -p PROMPT --json", stderr)
	var mf modelFlags
	mf.register(fs)
	prompt := fs.String("p", "", "prompt")
	fs.Bool("json", true, "print JSON (the only format)")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	m, err := mf.load()
	if err != nil {
		return err
	}
	defer m.Close()
	s, err := m.NewSession()
	if err != nil {
		return err
	}
	defer s.Close()
	ids := m.Tokenize(*prompt, qsfTokenizeDefault)
	rows := make([][]jsonFloat, 0, len(ids))
	for _, id := range ids {
		logits, err := s.Forward(context.Background(), []int{id})
		if err != nil {
			return err
		}
		row := make([]jsonFloat, len(logits))
		for i, v := range logits {
			row[i] = jsonFloat(v)
		}
		rows = append(rows, row)
	}
	return json.NewEncoder(stdout).Encode(struct {
		PromptTokens []int         `json:"prompt_tokens"`
		Logits       [][]jsonFloat `json:"logits"`
	}{nonNil(ids), rows})
}

// jsonFloat is a float32 written with the digits that parse back to it
// exactly (NaN and infinities as null, which JSON cannot hold otherwise).
type jsonFloat float32

func (f jsonFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return fmt.Appendf(nil, "%g", float32(f)), nil
}
