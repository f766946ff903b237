package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/qsf-llm/qsf"
)

func cmdPerplexity(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("perplexity", "-m FILE -f TEXT [-c 128] [-b 128]", stderr)
	var mf modelFlags
	mf.register(fs)
	file := fs.String("f", "", "text file to score")
	c := fs.Int("c", 128, "chunk (context) length in tokens")
	b := fs.Int("b", 128, "batch size in tokens (must be at least -c, as in llama-perplexity)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if *file == "" {
		return usagef("no text: pass -f FILE")
	}
	if *b < *c {
		return usagef("-b %d is smaller than -c %d", *b, *c)
	}
	text, err := os.ReadFile(*file)
	if err != nil {
		return err
	}
	if mf.ctx == 0 {
		mf.ctx = *c
	}
	m, err := mf.load()
	if err != nil {
		return err
	}
	defer m.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := m.Perplexity(ctx, string(text), qsf.PerplexityOptions{Context: *c}, func(i, n int, running float64) {
		if !*asJSON {
			fmt.Fprintf(stdout, "[%d]%.4f,", i, running)
		}
	})
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(struct {
			PPL     float64   `json:"ppl"`
			StdErr  float64   `json:"ppl_stderr"`
			Chunks  int       `json:"n_chunks"`
			Scored  int       `json:"n_scored"`
			Running []float64 `json:"running_ppl"`
		}{res.PPL, res.StdErr, res.Chunks, res.Scored, res.Running})
	}
	fmt.Fprintf(stdout, "\nFinal estimate: PPL = %.4f +/- %.5f (%d chunks of %d tokens, %d scored)\n", res.PPL, res.StdErr, res.Chunks, *c, res.Scored)
	return nil
}
