package qsf_test

import (
	"fmt"
	"log"
	"log/slog"
	"os"

	"github.com/qsf-llm/qsf"
)

// Load reports what it changes or doubts in the config through
// Config.Logger; the library itself never prints.
func ExampleConfig_logger() {
	path, cleanup := tinyModel()
	defer cleanup()

	noTime := func(groups []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: noTime}))
	m, err := qsf.Load(path, qsf.Config{Threads: 1, ContextLength: 100000, Logger: logger})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	// Output:
	// level=WARN msg="context 100000 is longer than the 256 tokens the model was trained on: output past 256 tokens may be poor"
}

// Validate refuses sampling values out of range; Session.Generate refuses
// the same values.
func ExampleSamplerOptions_Validate() {
	opts := qsf.SamplerOptions{Temperature: 0.8, TopP: 7}
	fmt.Println(opts.Validate())
	// Output: qsf: invalid option: top-p 7 is outside [0, 1]
}

// Version is the qsf module's version in the program's build info.
func ExampleVersion() {
	fmt.Println("qsf", qsf.Version())
}
