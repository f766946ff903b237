// Command qsf runs, inspects and measures language models with the qsf
// library.
//
// Usage:
//
//	qsf <command> [flags]
//
// Run "qsf help" for the list of commands and "qsf <command> --help" for
// the flags of one.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// command is one subcommand of the CLI.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

// commands is filled in init: the commands refer to it for their usage
// text, which a package-level initializer cannot.
var commands map[string]command

func init() {
	commands = map[string]command{
		"run":        {"generate text from a prompt", cmdRun},
		"logits":     {"print the logits after every prompt position", cmdLogits},
		"tokenize":   {"print the token ids of a text", cmdTokenize},
		"inspect":    {"show a model file's metadata and tensors", cmdInspect},
		"convert":    {"convert a GGUF, Hugging Face or llama2.c model to QSF", cmdConvert},
		"quantize":   {"quantize an f32/f16/bf16 model (GGUF, QSF, HF or llama2.c) to QSF's own low-bit, ternary or mixed types (with calibration)", cmdQuantize},
		"verify":     {"check every checksum of a QSF file", cmdVerify},
		"perplexity": {"measure perplexity on a text file (llama-perplexity's method)", cmdPerplexity},
		"kernels":    {"list the kernel tiers this CPU can run, slowest first", cmdKernels},
		"synth":      {"write a random-weight model file of a real model's shape", cmdSynth},
		"pull":       {"download a model (URL or hf://OWNER/REPO/FILE.gguf) into the model folder", cmdPull},
		"list":       {"list the models in the model folder", cmdList},
		"bench":      {"measure prefill and decode speed (and memory bandwidth)", cmdBench},
		"plan":       {"print the memory plan of a model under a RAM budget", cmdPlan},
		"template":   {"print a conversation formatted with a model's chat template", cmdTemplate},
		"chat":       {"chat with a model in the terminal (streamed, /save and /load)", cmdChat},
		"serve":      {"serve a model over the OpenAI HTTP API (127.0.0.1 by default)", cmdServe},
		"version":    {"print the version of qsf and of Go it was built with", cmdVersion},
		"parity":     {"compare prompt logits and greedy tokens with a llama.cpp reference; write a receipt", cmdParity},
	}
}

func main() {
	os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr))
}

func runMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "qsf: unknown command %q (run 'qsf help')\n", args[0])
		return 2
	}
	if err := cmd.run(args[1:], stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		if errors.Is(err, context.Canceled) {
			fmt.Fprintf(stderr, "qsf %s: interrupted\n", args[0])
			return 130
		}
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "qsf %s: %v\n", args[0], err)
			return 2
		}
		fmt.Fprintf(stderr, "qsf %s: %s\n", args[0], oneLine(err.Error()))
		return 1
	}
	return 0
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "qsf runs language models on the CPU.")
	fmt.Fprintln(w, "\nUsage: qsf <command> [flags]\n\nCommands:")
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(w, "  %-11s %s\n", name, commands[name].summary)
	}
	fmt.Fprintln(w, "\nRun 'qsf <command> --help' for a command's flags.")
}

// usageError marks a mistake in the command line (exit status 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// newFlags returns a flag set whose errors come back to the caller and
// whose --help output names the command.
func newFlags(name, args string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: qsf %s %s\n\n%s.\n\nFlags:\n", name, args, commands[name].summary)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses flags, also when they follow positional arguments.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageError{err.Error()}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
