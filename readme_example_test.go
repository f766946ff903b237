package qsf_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/qsf-llm/qsf"
)

// Example_readme is the Go API snippet of README.md, compiled by go test
// (TestREADMESnippet checks that the two stay the same). It has no Output
// comment, so it is compiled but not run: "model.gguf" is a placeholder.
func Example_readme() {
	// README begin
	ctx := context.Background() // cancel it to stop Generate

	m, err := qsf.Load("model.gguf", qsf.Config{}) // Threads, ContextLength, Kernel, NoMmap, NoRepack
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()

	s, err := m.NewSession() // one conversation: its own KV cache (threads are the model's)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	res, err := s.Generate(ctx, "Once upon a time", qsf.GenerateOptions{
		MaxTokens: 64,
		Sampling:  qsf.SamplerOptions{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, Seed: 1},
		Stop:      []string{"\n\n"},
	}, func(t qsf.Token) error {
		fmt.Print(t.Text) // valid UTF-8; return an error to stop
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("\n(%d tokens, stopped by %s)\n", len(res.Tokens), res.Reason)
	// README end
}

// TestREADMESnippet checks that the Go code in README.md is the body of
// Example_readme, so the README shows code that compiles.
func TestREADMESnippet(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("readme_example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	// The first Go block after the "## Go API" heading.
	blocks := regexp.MustCompile("(?s)\n## Go API\n.*?```go\n(.*?)```").FindAllSubmatch(readme, -1)
	if len(blocks) != 1 {
		t.Fatal(`README.md has no Go block under "## Go API"`)
	}
	body := regexp.MustCompile(`(?s)// README begin\n(.*?)\t// README end`).FindSubmatch(src)
	if body == nil {
		t.Fatal("no README markers in readme_example_test.go")
	}
	want := strings.ReplaceAll("\n"+string(body[1]), "\n\t", "\n")[1:]
	if got := string(blocks[0][1]); got != want {
		t.Errorf("README.md's Go block differs from Example_readme:\n--- README\n%s--- example\n%s", got, want)
	}
}
