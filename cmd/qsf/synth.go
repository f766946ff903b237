package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/qsf-llm/qsf/internal/atomicfile"
	"github.com/qsf-llm/qsf/quant"
	"github.com/qsf-llm/qsf/synth"
)

func cmdSynth(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("synth", "--shape NAME --type TYPE -o FILE", stderr)
	shapeName := fs.String("shape", "tiny", "model shape: "+strings.Join(synth.ShapeNames(), ", "))
	typeName := fs.String("type", "q8_0", "tensor type mix: "+strings.Join(synth.FileTypeNames(), ", "))
	seed := fs.Uint64("seed", 1, "random seed (the same seed gives the same file)")
	out := fs.String("o", "", "output file (GGUF)")
	threads := fs.Int("threads", 0, "threads generating and quantizing (0 = one per CPU)")
	dry := fs.Bool("plan", false, "print the tensor plan and sizes without writing a file")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	shape, err := synth.LookupShape(*shapeName)
	if err != nil {
		return usagef("%v", err)
	}
	ft, err := synth.ParseFileType(*typeName)
	if err != nil {
		return usagef("%v", err)
	}
	p, err := synth.NewPlan(shape, ft, *seed)
	if err != nil {
		return err
	}
	size, err := p.FileSize()
	if err != nil {
		return err
	}
	if *dry {
		printPlan(stdout, p, size)
		return nil
	}
	if *out == "" {
		return usagef("no output: pass -o FILE (or --plan)")
	}
	return writeSynth(p, *out, size, *threads, stdout, stderr)
}

// printPlan prints the tensor table of a plan and its totals.
func printPlan(w io.Writer, p *synth.Plan, size int64) {
	fmt.Fprintf(w, "shape %s (%s), type %s, seed %d: %d parameters\n", p.Shape.Name, p.Shape.Arch, p.FileType, p.Seed, p.Shape.Params())
	if p.Shape.Experts > 0 {
		fmt.Fprintf(w, "  %d experts, %d used per token: %d active parameters\n", p.Shape.Experts, p.Shape.ExpertsUsed, p.Shape.ActiveParams())
	}
	for _, t := range p.Tensors {
		fmt.Fprintf(w, "  %-28s %-5v %v %d bytes\n", t.Name, t.Type, t.Shape, t.Bytes)
	}
	fmt.Fprintf(w, "%d tensors (%s), tensor data %d bytes, file %d bytes\n",
		len(p.Tensors), typeCounts(p.TypeCounts()), p.TensorBytes(), size)
}

// typeCounts formats tensor counts by type, in type id order.
func typeCounts(c map[quant.Type]int) string {
	types := make([]quant.Type, 0, len(c))
	for t := range c {
		types = append(types, t)
	}
	sort.Slice(types, func(i, j int) bool { return types[i] < types[j] })
	s := make([]string, len(types))
	for i, t := range types {
		s[i] = fmt.Sprintf("%d %v", c[t], t)
	}
	return strings.Join(s, " + ")
}

// writeSynth writes the plan to path through a temporary file in the same
// folder, so a failed or interrupted run leaves no partial model behind.
func writeSynth(p *synth.Plan, path string, size int64, threads int, stdout, stderr io.Writer) error {
	ctx, stop := interruptContext()
	defer stop()
	start := time.Now()
	if err := writeSynthFile(ctx, p, path, synth.WriteOptions{Threads: threads, Progress: progressPrinter(stderr, start)}); err != nil {
		return err
	}
	el := time.Since(start)
	fmt.Fprintf(stdout, "wrote %s: %s shape, %s, seed %d; %d tensors (%s), %d bytes (%.1f MiB) in %.1f s (%.0f MiB/s)\n",
		path, p.Shape.Name, p.FileType, p.Seed, len(p.Tensors), typeCounts(p.TypeCounts()), size,
		float64(size)/(1<<20), el.Seconds(), float64(size)/(1<<20)/el.Seconds())
	return nil
}

// progressPrinter reports progress on one rewritten line when w is a
// terminal, and as a plain line every 10% otherwise.
func progressPrinter(w io.Writer, start time.Time) func(synth.Progress) {
	term := isTerminal(w)
	nextPct := 10
	var lastDraw time.Time
	return func(pr synth.Progress) {
		pct := int(100 * pr.Done / max(pr.Total, 1))
		if term {
			if now := time.Now(); now.Sub(lastDraw) > 100*time.Millisecond || pr.Done == pr.Total {
				lastDraw = now
				fmt.Fprintf(w, "\r\x1b[K[%d/%d] %3d%% %s (%.0f s)", pr.Tensor+1, pr.Tensors, pct, pr.Name, now.Sub(start).Seconds())
				if pr.Done == pr.Total {
					fmt.Fprintln(w)
				}
			}
			return
		}
		if pct >= nextPct {
			fmt.Fprintf(w, "synth: %d%% (tensor %d/%d %s, %.0f s)\n", pct, pr.Tensor+1, pr.Tensors, pr.Name, time.Since(start).Seconds())
			for nextPct <= pct {
				nextPct += 10
			}
		}
	}
}

// writeSynthFile writes the plan to path atomically (see package
// atomicfile), stopping when ctx is done.
func writeSynthFile(ctx context.Context, p *synth.Plan, path string, opts synth.WriteOptions) error {
	f, err := atomicfile.Create(ctx, path)
	if err != nil {
		return err
	}
	defer f.Abort()
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := p.Write(bw, opts); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return f.Commit()
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb"
}
