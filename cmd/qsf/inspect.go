package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/quant"
)

func cmdInspect(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("inspect", "FILE", stderr)
	asJSON := fs.Bool("json", false, "print the format, metadata and tensors as one JSON object (arrays over 256 elements as their type and length)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want one file")
	}
	f, err := format.Open(pos[0])
	if err != nil {
		return err
	}
	defer f.Close()
	if *asJSON {
		return inspectJSON(stdout, pos[0], f)
	}
	if f.QSF() != nil {
		return inspectQSF(pos[0], stdout)
	}
	fmt.Fprintf(stdout, "file: %s\nformat: GGUF v%d, %d bytes, data at offset %d, alignment %d\n\nmetadata (%d keys):\n",
		pos[0], f.Version, f.Size(), f.DataOffset, f.Alignment, f.Metadata.Len())
	for key, v := range f.Metadata.All() {
		fmt.Fprintf(stdout, "  %-45s %s\n", key, v.String())
	}
	fmt.Fprintf(stdout, "\ntensors (%d):\n", len(f.Tensors))
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "name\ttype\tshape\tbytes\t")
	var total uint64
	byType := map[string]int{}
	for _, t := range f.Tensors {
		dims := make([]string, len(t.Shape))
		for i, d := range t.Shape {
			dims[i] = fmt.Sprint(d)
		}
		fmt.Fprintf(tw, "%s\t%s\t[%s]\t%d\t\n", t.Name, typeLabel(t.Name, t.Type, t.Shape, t.Size), strings.Join(dims, " "), t.Size)
		total += t.Size
		byType[t.Type.String()]++
	}
	tw.Flush()
	var types []string
	for name, n := range byType {
		types = append(types, fmt.Sprintf("%s:%d", name, n))
	}
	fmt.Fprintf(stdout, "\ntotal: %d tensors, %d bytes (%.2f MiB), types %s\n", len(f.Tensors), total, float64(total)/(1<<20), strings.Join(sorted(types), " "))
	return nil
}

// typeLabel names a tensor's type and, for I2_S, the layout its size
// says (or that it matches none).
func typeLabel(name string, t quant.Type, shape []uint64, size uint64) string {
	if t != quant.I2_S {
		return t.String()
	}
	n := uint64(1)
	for _, d := range shape {
		n *= d
	}
	l, err := quant.DetectI2S(name, int(n), int(size))
	if err != nil {
		return "I2_S (no layout matches)"
	}
	return l.String()
}

func sorted(s []string) []string {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s
}
