package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/tokenizer"
)

var qsfTokenizeDefault = qsf.TokenizeOptions{}

func cmdTokenize(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("tokenize", "-m FILE [--no-bos] [--parse-special] TEXT | --jsonl FILE", stderr)
	path := fs.String("m", "", "model or vocab GGUF, or a tokenizer file (tokenizer.json, encoder.json, *.tiktoken, llama2.c tokenizer.bin)")
	noBOS := fs.Bool("no-bos", false, "do not add BOS/EOS")
	special := fs.Bool("parse-special", false, "match special-token text such as <s> as special tokens")
	jsonl := fs.String("jsonl", "", `read lines {"text":...} from FILE and write {"text":...,"ids":[...]}`)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if *path == "" {
		return usagef("no tokenizer: pass -m FILE")
	}
	tok, err := loadTokenizer(*path)
	if err != nil {
		return err
	}
	opts := tokenizer.EncodeOptions{AddSpecial: !*noBOS, ParseSpecial: *special}
	if *jsonl != "" {
		return tokenizeJSONL(tok, opts, *jsonl, stdout)
	}
	if len(pos) == 0 {
		return usagef("no text to tokenize")
	}
	return json.NewEncoder(stdout).Encode(nonNil(tok.Encode(strings.Join(pos, " "), opts)))
}

// loadTokenizer reads the tokenizer of a GGUF file (model or vocab only)
// or of a standalone tokenizer file.
func loadTokenizer(path string) (*tokenizer.Tokenizer, error) {
	head := make([]byte, 4)
	if f, err := os.Open(path); err == nil {
		io.ReadFull(f, head)
		f.Close()
	} else {
		return nil, err
	}
	if !bytes.Equal(head, []byte("GGUF")) {
		return tokenizer.Load(path)
	}
	f, err := format.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return tokenizer.FromGGUF(&f.Metadata)
}

func tokenizeJSONL(tok *tokenizer.Tokenizer, opts tokenizer.EncodeOptions, path string, stdout io.Writer) error {
	in, err := os.Open(path)
	if err != nil {
		return err
	}
	defer in.Close()
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 64<<20)
	enc := json.NewEncoder(stdout)
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var rec struct {
			Text *string `json:"text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil || rec.Text == nil {
			return fmt.Errorf("%s:%d: want a JSON object with a \"text\" string", path, line)
		}
		if err := enc.Encode(struct {
			Text string `json:"text"`
			IDs  []int  `json:"ids"`
		}{*rec.Text, nonNil(tok.Encode(*rec.Text, opts))}); err != nil {
			return err
		}
	}
	return sc.Err()
}
