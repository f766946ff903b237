package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/qsf-llm/qsf/convert"
	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/quant"
)

func cmdConvert(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("convert", "IN OUT [flags]", stderr)
	typ := fs.String("type", "", "re-quantize every matrix to this type (e.g. Q8_0, Q4_K, F16); default: keep the input's types")
	comp := fs.String("compress", "none", "layer compression: none, lz4 or lz4hc")
	threads := fs.Int("threads", 1, "threads converting rows")
	tok := fs.String("tokenizer", "", "llama2.c tokenizer.bin (default: tokenizer.bin or tok*.bin beside IN)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef("want IN and OUT")
	}
	opts := convert.Options{Threads: max(*threads, 1), Tokenizer: *tok}
	if opts.Compression, err = format.ParseCompression(*comp); err != nil {
		return usagef("%v", err)
	}
	if *typ != "" {
		if opts.Type, err = quant.ParseType(*typ); err != nil {
			return usagef("%v", err)
		}
		opts.Requantize = true
	}
	opts.Progress = progressBar(stderr, "")
	ctx, stop := interruptContext()
	defer stop()
	res, err := convert.ConvertContext(ctx, pos[0], pos[1], opts)
	if err != nil {
		return err
	}
	printSummary(stdout, pos[0], pos[1], res)
	return nil
}

// printSummary prints the sizes, the per-layer compression and the time
// of a conversion.
func printSummary(w io.Writer, in, out string, res *convert.Result) {
	fmt.Fprintf(w, "converted %s (%s, %s) -> %s (%s)\n", in, res.Input, mib(res.InputBytes), out, mib(res.OutputBytes))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "layer\ttype\tbytes\tstored\tratio\tcompression\t")
	var size, stored int64
	for i, e := range res.Layers {
		fmt.Fprintf(tw, "%d\t%v\t%d\t%d\t%.3f\t%v\t\n", i, e.Quant, e.Size, e.StoredSize, ratio(int64(e.StoredSize), int64(e.Size)), e.Compression)
		size += int64(e.Size)
		stored += int64(e.StoredSize)
	}
	tw.Flush()
	fmt.Fprintf(w, "layers: %s -> %s (ratio %.3f); file: %s -> %s (ratio %.3f); %v\n",
		mib(size), mib(stored), ratio(stored, size), mib(res.InputBytes), mib(res.OutputBytes),
		ratio(res.OutputBytes, res.InputBytes), res.Duration.Round(1e6))
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

func mib(n int64) string { return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20)) }

// progressBar returns a convert.Options.Progress that draws a bar of the
// layers written on a terminal, and prints a line per layer elsewhere,
// each prefixed by label when it is not empty.
func progressBar(w io.Writer, label string) func(layer, layers int, e format.LayerEntry) {
	term := isTerminal(w)
	if label != "" {
		label += ": "
	}
	return func(layer, layers int, e format.LayerEntry) {
		if term {
			const width = 30
			done := (layer + 1) * width / max(layers, 1)
			fmt.Fprintf(w, "\r%s[%s%s] layer %d/%d", label, strings.Repeat("#", done), strings.Repeat(".", width-done), layer+1, layers)
			if layer+1 == layers {
				fmt.Fprintln(w)
			}
			return
		}
		fmt.Fprintf(w, "%slayer %d/%d: %d bytes stored (%v)\n", label, layer+1, layers, e.StoredSize, e.Compression)
	}
}
