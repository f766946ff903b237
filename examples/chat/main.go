// Command chat embeds the qsf library in a small chatbot: it reads one
// message per line from stdin, answers with the model's chat template and
// streams the answer. Each turn evaluates only the new tokens (the
// session keeps its KV cache), and with -session the conversation is
// saved at the end and resumed at the next start.
//
//	go run ./examples/chat -m model.gguf -session chat.session
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"

	"github.com/qsf-llm/qsf"
)

func main() {
	path := flag.String("m", "", "model file (GGUF) with a chat template")
	tmpl := flag.String("template", "", "chat format when the model has no template (e.g. chatml)")
	system := flag.String("system", "You are a helpful assistant.", "system message")
	sessionPath := flag.String("session", "", "file to resume the conversation from and save it to")
	flag.Parse()
	if *path == "" {
		fmt.Fprintln(os.Stderr, "usage: chat -m model.gguf [-session FILE]")
		os.Exit(2)
	}

	m, err := qsf.Load(*path, qsf.Config{ChatTemplate: *tmpl})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	if _, err := m.ChatFormat(); err != nil {
		log.Fatal(err) // names the fallback to pass as -template
	}

	s, msgs := resume(m, *sessionPath, *system)
	defer s.Close()

	opts := qsf.GenerateOptions{MaxTokens: 512, Sampling: qsf.SamplerOptions{Temperature: 0.7, TopK: 40, TopP: 0.95, Seed: 1}}
	in := bufio.NewScanner(os.Stdin)
	for fmt.Print("> "); in.Scan(); fmt.Print("> ") {
		msgs = append(msgs, qsf.Message{Role: "user", Content: in.Text()})
		res, err := s.Chat(context.Background(), msgs, opts, func(t qsf.Token) error {
			_, err := fmt.Print(t.Text)
			return err
		})
		if errors.Is(err, qsf.ErrContextFull) {
			fmt.Println("[the conversation no longer fits the context: starting a new one]")
			s.Reset()
			msgs = msgs[:1]
			continue
		}
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("\n[%d prompt tokens evaluated, %d reused]\n", len(res.PromptTokens), res.CachedTokens)
		msgs = append(msgs, qsf.Message{Role: "assistant", Content: res.Text})
	}
	fmt.Println()
	if *sessionPath != "" {
		if err := save(s, *sessionPath); err != nil {
			log.Fatal(err)
		}
	}
}

// resume loads the saved conversation, or starts a new one when there is
// none.
func resume(m *qsf.Model, path, system string) (*qsf.Session, []qsf.Message) {
	if path != "" {
		f, err := os.Open(path)
		if err == nil {
			defer f.Close()
			s, err := m.LoadSession(f)
			if err != nil {
				log.Fatal(err) // damaged, or saved with another model
			}
			return s, s.Messages()
		}
		if !errors.Is(err, os.ErrNotExist) {
			log.Fatal(err)
		}
	}
	s, err := m.NewSession()
	if err != nil {
		log.Fatal(err)
	}
	return s, []qsf.Message{{Role: "system", Content: system}}
}

func save(s *qsf.Session, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := s.Save(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
