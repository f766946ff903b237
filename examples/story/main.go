// Command story embeds the qsf library: it loads a GGUF model and streams
// a story from a prompt, printing each piece of text as soon as it is
// generated. Ctrl-C stops it cleanly.
//
//	go run ./examples/story -m model.gguf "Once upon a time"
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"

	"github.com/qsf-llm/qsf"
)

func main() {
	path := flag.String("m", "", "model file (GGUF)")
	n := flag.Int("n", 200, "tokens to generate")
	temp := flag.Float64("temp", 0.8, "temperature (0 = greedy)")
	seed := flag.Int64("seed", 42, "random seed")
	flag.Parse()
	prompt := strings.Join(flag.Args(), " ")
	if *path == "" || prompt == "" {
		fmt.Fprintln(os.Stderr, "usage: story -m model.gguf PROMPT")
		os.Exit(2)
	}

	m, err := qsf.Load(*path, qsf.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	s, err := m.NewSession()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	fmt.Print(prompt)
	opts := qsf.GenerateOptions{
		MaxTokens: *n,
		Sampling:  qsf.SamplerOptions{Temperature: float32(*temp), TopK: 40, TopP: 0.95, MinP: 0.05, Seed: *seed},
	}
	_, err = s.Generate(ctx, prompt, opts, func(t qsf.Token) error {
		fmt.Print(t.Text)
		return nil
	})
	fmt.Println()
	if err != nil && ctx.Err() == nil {
		log.Fatal(err)
	}
	st := s.Stats()
	fmt.Fprintf(os.Stderr, "%d tokens at %.1f tok/s\n", st.GeneratedTokens, st.DecodeTokensPerSecond())
}
