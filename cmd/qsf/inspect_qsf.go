package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/qsf-llm/qsf/format"
)

// inspectQSF prints a QSF file: header, architecture config, sections,
// tokenizer and metadata keys, the layer table and the tensors.
func inspectQSF(path string, stdout io.Writer) error {
	f, err := format.OpenWith(path, format.OpenOptions{DeferLayerCRC: true})
	if err != nil {
		return err
	}
	defer f.Close()
	q := f.QSF()
	if q == nil {
		return fmt.Errorf("%s is not a QSF file", path)
	}
	h, a := &q.Header, &q.Arch
	fmt.Fprintf(stdout, "file: %s\nformat: QSF v%d, %d bytes, header crc %08x\n\n", path, h.Version, h.FileSize, h.CRC)
	fmt.Fprintf(stdout, "header:\n")
	fmt.Fprintf(stdout, "  architecture %v (%s), activation %v, norm %v, position %v, tied embeddings %v\n",
		h.Arch, f.Architecture(), h.Activation, h.Norm, h.Position, h.Tied())
	fmt.Fprintf(stdout, "  layers %d, hidden %d, heads %d, kv heads %d, head dim %d, ffn %d, vocab %d, max seq %d\n",
		h.Layers, h.HiddenDim, h.Heads, h.KVHeads, h.HeadDim, h.FFNDim, h.Vocab, h.MaxSeqLen)
	fmt.Fprintf(stdout, "  default type %v, rope theta %g, bos %d, eos %d, pad %d\n", h.DefaultQuant, h.RopeTheta, h.BOS, h.EOS, h.PAD)
	fmt.Fprintf(stdout, "\narchitecture config:\n")
	fmt.Fprintf(stdout, "  norm eps %g, key dim %d, value dim %d, rope dim %d (%v), sliding window %d\n",
		a.NormEps, a.KeyDim, a.ValueDim, a.RopeDim, a.RopeStyle, a.SlidingWindow)
	fmt.Fprintf(stdout, "  rope scaling %d (factor %g, original ctx %d), softcaps %g/%g, features %#04x\n",
		a.RopeScaling, a.RopeScale, a.RopeOrigCtx, a.AttnSoftcap, a.FinalSoftcap, a.Features)
	fmt.Fprintf(stdout, "\nsections:\n")
	for _, s := range q.Sections() {
		fmt.Fprintf(stdout, "  %-10s offset %10d  %10d bytes  crc %08x\n", s.Name, s.Offset, s.Length, s.CRC)
	}
	for _, part := range []struct {
		name string
		md   *format.Metadata
	}{{"tokenizer", &q.Tokenizer}, {"metadata", &q.Metadata}} {
		fmt.Fprintf(stdout, "\n%s (%d keys):\n", part.name, part.md.Len())
		for key, v := range part.md.All() {
			fmt.Fprintf(stdout, "  %-45s %s\n", key, v.String())
		}
	}
	fmt.Fprintf(stdout, "\nlayers (%d):\n", len(q.Layers))
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "layer\toffset\tbytes\tstored\tratio\ttype\tcompression\ttensors\timportance\tcrc\t")
	var size, stored int64
	for i, e := range q.Layers {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%.3f\t%v\t%v\t%d\t%g\t%08x\t\n", i, e.Offset, e.Size, e.StoredSize,
			ratio(int64(e.StoredSize), int64(e.Size)), e.Quant, e.Compression, e.Tensors, e.Importance, e.CRC)
		size += int64(e.Size)
		stored += int64(e.StoredSize)
	}
	tw.Flush()
	fmt.Fprintf(stdout, "  total %d bytes, %d stored (ratio %.3f)\n", size, stored, ratio(stored, size))
	printQuantizeReport(stdout, &q.Metadata)
	fmt.Fprintf(stdout, "\ntensors (%d):\n", len(f.Tensors))
	tw = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "name\ttype\tshape\tbytes\t")
	for _, t := range f.Tensors {
		fmt.Fprintf(tw, "%s\t%s\t%v\t%d\t\n", t.Name, typeLabel(t.Name, t.Type, t.Shape, t.Size), t.Shape, t.Size)
	}
	return tw.Flush()
}

// printQuantizeReport prints the quality report qsf quantize stored in md
// (the qsf.quantize.* keys of docs/FORMAT.md), if any: per tensor its
// type, bits per weight, relative MSE and cosine.
func printQuantizeReport(w io.Writer, md *format.Metadata) {
	names, ok := md.Strings(mdQuantNames)
	if !ok {
		return
	}
	types, _ := md.Strings(mdQuantTypes)
	bpw, _ := md.Float32s(mdQuantTensorBPW)
	mse, _ := md.Float32s(mdQuantRelMSE)
	cos, _ := md.Float32s(mdQuantCosine)
	if len(types) != len(names) || len(bpw) != len(names) || len(mse) != len(names) || len(cos) != len(names) {
		fmt.Fprintf(w, "\nquantization report: arrays of unequal length\n")
		return
	}
	all, _ := md.Float(mdQuantBPW)
	tokens, _ := md.Uint(mdQuantTokens)
	fmt.Fprintf(w, "\nquantization report (%.4f bits per weight over the matrices, %d calibration tokens):\n", all, tokens)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "tensor\ttype\tbpw\trel MSE\tcosine\t")
	for i, n := range names {
		fmt.Fprintf(tw, "%s\t%s\t%.3f\t%.3g\t%.6f\t\n", n, types[i], bpw[i], mse[i], cos[i])
	}
	tw.Flush()
}
