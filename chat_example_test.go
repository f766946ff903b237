package qsf_test

import (
	"bytes"
	"context"
	"fmt"
	"log"

	"github.com/qsf-llm/qsf"
)

func ExampleSession_Chat() {
	path, cleanup := tinyModel()
	defer cleanup()
	// A real instruct model brings its chat template; this random-weight
	// one has none, so the example names a format.
	m, err := qsf.Load(path, qsf.Config{Threads: 1, ChatTemplate: "chatml"})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	s, err := m.NewSession()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	ctx := context.Background()
	msgs := []qsf.Message{{Role: "system", Content: "You are terse."}}
	for _, question := range []string{"Hello!", "What is a KV cache?"} {
		msgs = append(msgs, qsf.Message{Role: "user", Content: question})
		res, err := s.Chat(ctx, msgs, qsf.GenerateOptions{MaxTokens: 8}, func(t qsf.Token) error {
			return nil // a real program would print t.Text here
		})
		if err != nil {
			log.Fatal(err)
		}
		msgs = append(msgs, qsf.Message{Role: "assistant", Content: res.Text})
		fmt.Println("reused from the cache:", res.CachedTokens > 0)
	}
	// Output:
	// reused from the cache: false
	// reused from the cache: true
}

func ExampleSession_Save() {
	path, cleanup := tinyModel()
	defer cleanup()
	m, err := qsf.Load(path, qsf.Config{Threads: 1, ChatTemplate: "chatml"})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	s, err := m.NewSession()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	msgs := []qsf.Message{{Role: "user", Content: "Hello!"}}
	if _, err := s.Chat(context.Background(), msgs, qsf.GenerateOptions{MaxTokens: 4}, nil); err != nil {
		log.Fatal(err)
	}

	var file bytes.Buffer // a file, in a real program
	if err := s.Save(&file); err != nil {
		log.Fatal(err)
	}
	resumed, err := m.LoadSession(&file)
	if err != nil {
		log.Fatal(err)
	}
	defer resumed.Close()
	fmt.Println(resumed.Pos() == s.Pos(), len(resumed.Messages()))
	// Output: true 2
}
