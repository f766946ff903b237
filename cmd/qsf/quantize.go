package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/convert"
	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/internal/atomicfile"
	"github.com/qsf-llm/qsf/quant"
)

// quantAliases are the short names --quant accepts: QSF's own types and
// ternary, llama.cpp's TQ2_0 (2.06 bits per weight; the fastest ternary
// kernels; its rows must be whole blocks of 256).
var quantAliases = map[string]quant.Type{"2bit": quant.QSF_Q2R, "3bit": quant.QSF_Q3R, "4bit": quant.QSF_Q4R, "ternary": quant.TQ2_0}

func cmdQuantize(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("quantize", "IN OUT --quant TYPE [--calibration FILE] [flags]\n\nIN: a GGUF or QSF file of f32/f16/bf16 weights, a Hugging Face model\ndirectory (config.json, *.safetensors) or one of its .safetensors files,\nor a llama2.c checkpoint. OUT: a QSF file.", stderr)
	typ := fs.String("quant", "", "type of every matrix: 2bit, 3bit, 4bit (QSF_Q2R/Q3R/Q4R), ternary (TQ2_0), mixed (with --bpw or --target-size) or any type name qsf convert --type takes (QSF_Q2A/Q3A/Q4A, Q4_K, TQ1_0, ...)")
	outType := fs.String("output-type", "", "type of output.weight (the LM head); default: --quant")
	embdType := fs.String("embd-type", "", "type of token_embd.weight; default: --quant")
	fallback := fs.String("fallback", "F16", "type of a matrix whose row length does not fit --quant's blocks")
	calib := fs.String("calibration", "", "text file: IN is run over it, and the rounding minimises the error of the products with its activations (GPTQ for the rotated types, activation energy per column for the others)")
	saveImp := fs.String("save-importance", "", "with --calibration: also write the measured activation energies to FILE (JSON) for --importance")
	loadImp := fs.String("importance", "", "read the activation energies from FILE (written by --save-importance) instead of running --calibration")
	calibCtx := fs.Int("calibration-ctx", 128, "chunk length in tokens for --calibration")
	comp := fs.String("compress", "none", "layer compression: none, lz4 or lz4hc")
	threads := fs.Int("threads", 1, "threads quantizing rows")
	asJSON := fs.Bool("json", false, "print one JSON object as the last line (bpw, per-tensor quality, layer importance, LZ4 ratio per type)")
	progress := fs.Bool("progress", false, "show a progress bar of the layers written on stderr")
	tok := fs.String("tokenizer", "", "llama2.c input: its tokenizer.bin (default: tokenizer.bin or tok*.bin beside IN)")
	bpw := fs.Float64("bpw", 0, "mixed precision: choose a type per matrix (QSF_Q2R ... Q8_0) by its measured sensitivity so that the matrices average at most N bits per weight (needs --calibration)")
	targetSize := fs.Float64("target-size", 0, "mixed precision as --bpw, sized so that the output file takes at most this many MiB")
	outliers := fs.Float64("outliers", 0, "keep K entries per row of every layer matrix in an fp16 outlier side table (with --calibration, those of largest activation energy × w², else largest |w|); a value below 1 is a fraction of the row")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef("want IN and OUT")
	}
	mixed := *bpw != 0 || *targetSize != 0
	if strings.EqualFold(*typ, "mixed") && !mixed {
		return usagef("--quant mixed needs --bpw N or --target-size MiB (and --calibration)")
	}
	if *typ == "" && !mixed {
		return usagef("no type: pass --quant 2bit|3bit|4bit|ternary|TYPE, or --quant mixed with --bpw N / --target-size MiB")
	}
	if *bpw != 0 && *targetSize != 0 {
		return usagef("--bpw and --target-size exclude each other")
	}
	if *bpw < 0 || *targetSize < 0 || math.IsNaN(*bpw) || math.IsNaN(*targetSize) {
		return usagef("--bpw and --target-size must be positive")
	}
	if mixed && *calib == "" {
		return usagef("--bpw and --target-size need --calibration (the sensitivity of each matrix is measured on it)")
	}
	want := quant.QSF_Q2R
	if *typ != "" && !strings.EqualFold(*typ, "mixed") {
		if mixed {
			return usagef("--quant %s and --bpw/--target-size exclude each other", *typ)
		}
		if want, err = parseQuant(*typ); err != nil {
			return err
		}
	}
	overrides := map[string]quant.Type{}
	for name, v := range map[string]string{"output.weight": *outType, "token_embd.weight": *embdType} {
		if v == "" {
			continue
		}
		if overrides[name], err = parseQuant(v); err != nil {
			return err
		}
	}
	fb, err := quant.ParseType(*fallback)
	if err != nil {
		return usagef("--fallback: %v", err)
	}
	if *calibCtx < 2 {
		return usagef("--calibration-ctx %d: want at least 2", *calibCtx)
	}
	if *calib != "" && *loadImp != "" {
		return usagef("--calibration and --importance exclude each other")
	}
	if *saveImp != "" && *calib == "" {
		return usagef("--save-importance needs --calibration")
	}
	if *outliers < 0 || math.IsNaN(*outliers) || *outliers >= 1 && *outliers != math.Trunc(*outliers) {
		return usagef("--outliers %g: want a whole number of entries per row, or a fraction below 1", *outliers)
	}
	if *outliers > 0 && mixed {
		return usagef("--outliers and --bpw/--target-size exclude each other")
	}
	if *threads < 1 {
		return usagef("--threads %d: want at least 1", *threads)
	}
	in, out := pos[0], pos[1]
	compression, err := format.ParseCompression(*comp)
	if err != nil {
		return usagef("%v", err)
	}
	// Pass 1 writes the quantized model uncompressed into a temporary
	// directory beside OUT; its quality is measured; pass 2 copies it with
	// the report in its metadata, the layer importance and the
	// compression, and only a complete file is renamed to OUT.
	opts := convert.Options{Type: want, Requantize: true, TensorTypes: overrides, Fallback: fb, Threads: *threads}
	if *progress {
		opts.Progress = progressBar(stderr, "quantize")
	}
	if *outliers > 0 {
		opts.Outliers = func(name string, rows, cols int) int {
			if *outliers >= 1 {
				return int(*outliers)
			}
			return max(1, int(math.Round(*outliers*float64(cols))))
		}
	}
	ctx, stop := interruptContext()
	defer stop()
	tmp, err := os.MkdirTemp(filepath.Dir(out), ".qsf-quantize-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	srcPath, kind, err := quantizeSource(ctx, in, tmp, *tok)
	if err != nil {
		return err
	}
	src, err := checkQuantizeInput(srcPath, in)
	if err != nil {
		return err
	}
	defer src.Close()
	nLayers := layerCount(src)

	calibTokens := 0
	var layerImp []float64
	var energy map[string][]float32
	var gram map[string][]float64
	var mixRep []mixReport
	switch {
	case *calib != "":
		text, err := readCalibration(*calib)
		if err != nil {
			return err
		}
		m, err := qsf.Load(srcPath, qsf.Config{Threads: *threads, ContextLength: *calibCtx})
		if err != nil {
			return err
		}
		defer m.Close()
		if gramBytes(src) <= maxGramBytes {
			gram, calibTokens, err = m.ActivationGram(ctx, text, qsf.CalibrationOptions{Context: *calibCtx})
			energy = gramDiagonals(gram)
		} else {
			fmt.Fprintf(stderr, "calibration: the matrices' second moments would take %s; measuring the activation energy only (no GPTQ)\n", mib(gramBytes(src)))
			energy, calibTokens, err = m.ActivationEnergy(ctx, text, qsf.CalibrationOptions{Context: *calibCtx})
		}
		if err != nil {
			return fmt.Errorf("calibration: %w", err)
		}
		if layerImp, _, err = m.LayerImportance(ctx, text, qsf.CalibrationOptions{Context: *calibCtx}); err != nil {
			return fmt.Errorf("calibration: %w", err)
		}
		fmt.Fprintf(stderr, "calibration: %d tokens, %d matrices measured\n", calibTokens, len(energy))
		if *saveImp != "" {
			if err := saveImportance(ctx, *saveImp, importanceFile{Tokens: calibTokens, Energy: energy, Gram: gram, Layers: layerImp}); err != nil {
				return err
			}
		}
		if mixed {
			var elems float64
			for _, t := range src.Tensors {
				if len(t.Shape) == 2 && t.Shape[1] > 1 {
					elems += float64(t.Elements())
				}
			}
			budget := *bpw * elems
			if *targetSize != 0 {
				budget = matrixBudget(src, *targetSize*(1<<20))
			}
			plan, rep, err := planMixed(ctx, m, src, gram, energy, text, budget, fb, stderr)
			if err != nil {
				return err
			}
			mixRep = rep
			for name, c := range plan {
				overrides[name] = c.typ
			}
			opts.TensorTypes = overrides
			opts.QuantizeMatrix = func(name string, typ quant.Type, rows, cols int, w []float32) ([]byte, error) {
				if c, ok := plan[name]; ok && c.typ == typ {
					return c.data, nil
				}
				return nil, nil
			}
		}
	case *loadImp != "":
		f, err := loadImportance(*loadImp)
		if err != nil {
			return err
		}
		energy, calibTokens, gram, layerImp = f.Energy, f.Tokens, f.Gram, f.Layers
	}
	if layerImp != nil && len(layerImp) != nLayers {
		return fmt.Errorf("importance: %d layer scores for a model of %d layers", len(layerImp), nLayers)
	}
	if energy != nil {
		opts.Importance = func(name string) []float32 { return energy[name] }
	}
	if gram != nil && opts.QuantizeMatrix == nil {
		opts.QuantizeMatrix = func(name string, typ quant.Type, rows, cols int, w []float32) ([]byte, error) {
			g := gram[name]
			if g == nil || len(g) != cols*cols {
				return nil, nil
			}
			tr, err := quant.Lookup(typ)
			if err != nil || !tr.RotatedInput {
				return nil, nil
			}
			rb, err := quant.RowBytes(typ, cols)
			if err != nil {
				return nil, err
			}
			dst := make([]byte, rows*rb)
			return dst, quant.QuantizeGPTQ(typ, dst, w, rows, cols, g)
		}
	}
	pass1 := filepath.Join(tmp, "quantized.qsf")
	if _, err := convert.ConvertContext(ctx, srcPath, pass1, opts); err != nil {
		return err
	}
	rep, err := qualityReport(src, pass1, compression)
	if err != nil {
		return err
	}
	rep.Type, rep.CalibrationTokens, rep.Mixed, rep.LayerImportance = want.String(), calibTokens, mixRep, layerImp
	if mixed {
		rep.Type = "mixed"
	} else {
		var kept []string
		for _, t := range rep.Tensors {
			if _, over := overrides[t.Name]; !over && t.Type != want.String() {
				kept = append(kept, t.Name)
			}
		}
		if len(kept) > 0 {
			fmt.Fprintf(stderr, "quantize: %d matrices (%s, ...) have rows that are not whole %v blocks (%d elements): kept at --fallback %v\n", len(kept), kept[0], want, want.BlockSize(), fb)
		}
	}
	final := filepath.Join(tmp, "final.qsf")
	opts2 := convert.Options{Compression: compression, Threads: *threads, Metadata: rep.metadata(kind)}
	if layerImp != nil {
		opts2.LayerImportance = make([]float32, len(layerImp))
		for i, v := range layerImp {
			opts2.LayerImportance[i] = float32(v)
		}
	}
	if *progress {
		opts2.Progress = progressBar(stderr, "write")
	}
	res, err := convert.ConvertContext(ctx, pass1, final, opts2)
	if err != nil {
		return err
	}
	rep.Bytes = res.OutputBytes
	if *targetSize != 0 && float64(res.OutputBytes) > *targetSize*(1<<20) {
		return fmt.Errorf("%w: the output would take %s, more than --target-size %g MiB; nothing written", errTargetSize, mib(res.OutputBytes), *targetSize)
	}
	if err := os.Rename(final, out); err != nil {
		return err
	}
	rep.print(stdout)
	fmt.Fprintf(stdout, "quantized %s -> %s (%s): %.4f bits per weight over the matrices\n", in, out, mib(res.OutputBytes), rep.BPW)
	if *asJSON {
		b, err := json.Marshal(rep)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s\n", b)
	}
	return nil
}

// parseQuant parses a --quant value: an alias of quantAliases or a type
// name that weights can be quantized to.
func parseQuant(s string) (quant.Type, error) {
	t, ok := quantAliases[strings.ToLower(s)]
	if !ok {
		var err error
		if t, err = quant.ParseType(s); err != nil {
			return 0, usagef("--quant: %v", err)
		}
	}
	if tr, err := quant.Lookup(t); err != nil || tr.QuantizeRef == nil || tr.BlockSize == 1 && t != quant.F16 && t != quant.BF16 {
		return 0, usagef("%v: not a type qsf can quantize weights to", t)
	}
	return t, nil
}

// quantizeReport is the --json line of qsf quantize.
type quantizeReport struct {
	Type              string          `json:"type"`
	BPW               float64         `json:"bpw"` // bytes of the 2-D tensors × 8 / their elements
	Bytes             int64           `json:"bytes"`
	CalibrationTokens int             `json:"calibration_tokens"`
	Tensors           []tensorQuality `json:"tensors"`
	// LayerImportance is each layer's Model.LayerImportance on the
	// calibration text (nil without calibration), as in the layer index.
	LayerImportance []float64 `json:"layer_importance,omitempty"`
	// LZ4 is, per tensor type, how the matrices of that type compress
	// one by one (with --compress lz4 or lz4hc).
	LZ4   []lz4Type   `json:"lz4,omitempty"`
	Mixed []mixReport `json:"mixed,omitempty"` // --bpw / --target-size: each matrix's sensitivity and choice
}

// lz4Type is the compressibility of the matrices of one type.
type lz4Type struct {
	Type       string  `json:"type"`
	Tensors    int     `json:"tensors"`
	Bytes      int64   `json:"bytes"`
	Compressed int64   `json:"compressed"`
	Ratio      float64 `json:"ratio"` // compressed / bytes
}

// tensorQuality compares one quantized matrix with its source.
type tensorQuality struct {
	Name   string  `json:"name"`
	Type   string  `json:"type"`
	BPW    float64 `json:"bpw"`
	RelMSE float64 `json:"rel_mse"` // ‖w−q‖²/‖w‖²
	Cosine float64 `json:"cosine"`

	lz4  int64 // bytes once compressed alone (0 without compression)
	size int64
}

// quantizeSource returns the path of a GGUF or QSF file holding in's
// weights, and the kind of in (gguf, qsf, hf or llama2c). A GGUF or QSF
// file is used as it is; a Hugging Face model or a llama2.c checkpoint is
// first converted, keeping its float types, into a QSF file in dir.
func quantizeSource(ctx context.Context, in, dir, tokenizer string) (string, string, error) {
	st, err := os.Stat(in)
	if err != nil {
		return "", "", err
	}
	if !st.IsDir() && !strings.HasSuffix(in, ".safetensors") {
		f, err := os.Open(in)
		if err != nil {
			return "", "", err
		}
		head := make([]byte, 4)
		_, err = io.ReadFull(f, head)
		f.Close()
		switch {
		case err == nil && string(head) == format.Magic:
			return in, "gguf", nil
		case err == nil && string(head) == format.QSFMagic:
			return in, "qsf", nil
		}
	}
	path := filepath.Join(dir, "source.qsf")
	res, err := convert.ConvertContext(ctx, in, path, convert.Options{Tokenizer: tokenizer})
	if err != nil {
		if ctx.Err() != nil {
			return "", "", err
		}
		return "", "", fmt.Errorf("%s: not a GGUF or QSF file, and not readable as a Hugging Face or llama2.c model: %w", in, err)
	}
	return path, res.Input, nil
}

// checkQuantizeInput opens the GGUF or QSF file path (the weights of the
// input named in) and checks that its matrices are float (f32, f16 or
// bf16): quantizing quantized weights again would compound the errors.
func checkQuantizeInput(path, in string) (*format.File, error) {
	src, err := format.OpenWith(path, format.OpenOptions{NoMmap: true})
	if err != nil {
		if path == in {
			return nil, err // the error names the file
		}
		return nil, fmt.Errorf("%s: %w", in, err)
	}
	for _, t := range src.Tensors {
		if len(t.Shape) >= 2 && t.Type != quant.F32 && t.Type != quant.F16 && t.Type != quant.BF16 {
			src.Close()
			return nil, fmt.Errorf("%s: tensor %s is %v; qsf quantize wants an f32, f16 or bf16 model", in, t.Name, t.Type)
		}
	}
	return src, nil
}

// importanceFile is what --save-importance writes: the activation energy
// of each matrix's columns, by tensor name, and the tokens measured.
type importanceFile struct {
	Tokens int                  `json:"tokens"`
	Energy map[string][]float32 `json:"energy"`
	Gram   map[string][]float64 `json:"gram,omitempty"`   // mean x·xᵀ of each matrix's input, cols×cols
	Layers []float64            `json:"layers,omitempty"` // Model.LayerImportance of each layer
}

// maxGramBytes bounds the memory the second moments of calibration may
// take; beyond it only their diagonals (the activation energy) are kept.
const maxGramBytes = 2 << 30

// gramBytes is the memory the second moments of src's matrices take.
func gramBytes(src *format.File) int64 {
	var n int64
	for _, t := range src.Tensors {
		if len(t.Shape) == 2 && t.Shape[1] > 1 {
			n += int64(t.Shape[0]) * int64(t.Shape[0]) * 8
		}
	}
	return n
}

// gramDiagonals returns the diagonal of each second moment: the
// activation energy of each column.
func gramDiagonals(gram map[string][]float64) map[string][]float32 {
	e := make(map[string][]float32, len(gram))
	for name, g := range gram {
		n := int(math.Sqrt(float64(len(g))))
		d := make([]float32, n)
		for i := range d {
			d[i] = float32(g[i*n+i])
		}
		e[name] = d
	}
	return e
}

func saveImportance(ctx context.Context, path string, f importanceFile) error {
	out, err := atomicfile.Create(ctx, path)
	if err != nil {
		return err
	}
	defer out.Abort()
	if err := json.NewEncoder(out).Encode(f); err != nil {
		return err
	}
	return out.Commit()
}

func loadImportance(path string) (importanceFile, error) {
	var f importanceFile
	b, err := os.ReadFile(path)
	if err != nil {
		return f, err
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return f, fmt.Errorf("importance file %s: %w", path, err)
	}
	if len(f.Energy) == 0 {
		return f, fmt.Errorf("importance file %s holds no energies", path)
	}
	for name, e := range f.Energy {
		for _, v := range e {
			if !(v >= 0) || math.IsInf(float64(v), 0) {
				return f, fmt.Errorf("importance file %s: tensor %s has energy %v", path, name, v)
			}
		}
	}
	return f, nil
}

// readCalibration reads a calibration text, refusing an empty file or one
// that is not UTF-8 text.
func readCalibration(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return "", fmt.Errorf("calibration file %s is empty", path)
	}
	if !utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0 {
		return "", fmt.Errorf("calibration file %s is not UTF-8 text", path)
	}
	return string(b), nil
}

// qualityReport compares every matrix of the QSF file out with the same
// tensor of src, sums the bits per weight of the matrices and, with
// compression, measures how each type's matrices compress.
func qualityReport(src *format.File, out string, compression format.Compression) (*quantizeReport, error) {
	q, err := format.OpenWith(out, format.OpenOptions{NoMmap: true})
	if err != nil {
		return nil, err
	}
	defer q.Close()
	rep := &quantizeReport{}
	var bytesTotal, elems uint64
	for i := range q.Tensors {
		t := &q.Tensors[i]
		if len(t.Shape) < 2 || t.Rows() < 1 || strings.HasSuffix(t.Name, quant.OutlierSuffix) {
			continue // an outlier table counts with its matrix
		}
		bytesTotal += t.Size
		if o, ok := q.Tensor(t.Name + quant.OutlierSuffix); ok {
			bytesTotal += o.Size
		}
		elems += t.Elements()
		s, ok := src.Tensor(t.Name)
		if !ok {
			return nil, fmt.Errorf("%s: tensor %s is not in the input", out, t.Name)
		}
		tq, err := compareTensor(src, s, q, t, compression)
		if err != nil {
			return nil, err
		}
		rep.Tensors = append(rep.Tensors, tq)
	}
	if elems == 0 {
		return nil, errors.New("quantize: the output has no matrices")
	}
	rep.BPW = float64(bytesTotal) * 8 / float64(elems)
	if compression != format.CompressNone {
		rep.LZ4 = lz4ByType(rep.Tensors)
	}
	return rep, nil
}

func compareTensor(src *format.File, s *format.TensorInfo, q *format.File, t *format.TensorInfo, compression format.Compression) (tensorQuality, error) {
	tq := tensorQuality{Name: t.Name, Type: t.Type.String(), BPW: float64(t.Size) * 8 / float64(t.Elements()), size: int64(t.Size)}
	a, err := dequantizeAll(src, s)
	if err != nil {
		return tq, err
	}
	data, err := q.TensorData(t)
	if err != nil {
		return tq, err
	}
	if compression != format.CompressNone {
		if tq.lz4, err = format.CompressedSize(data, compression); err != nil {
			return tq, fmt.Errorf("tensor %s: %w", t.Name, err)
		}
	}
	b := make([]float32, t.Elements())
	if err := quant.DequantizeRow(t.Type, b, data); err != nil {
		return tq, fmt.Errorf("tensor %s: %w", t.Name, err)
	}
	if o, ok := q.Tensor(t.Name + quant.OutlierSuffix); ok {
		table, err := q.TensorData(o)
		if err != nil {
			return tq, err
		}
		k := int(o.Cols()) / 2
		if err := quant.CheckOutliers(table, k, int(t.Rows()), int(t.Cols())); err != nil {
			return tq, fmt.Errorf("tensor %s: %w", o.Name, err)
		}
		quant.ApplyOutliers(b, table, k, int(t.Cols()))
		tq.size += int64(o.Size)
		tq.BPW = float64(tq.size) * 8 / float64(t.Elements())
	}
	if len(a) != len(b) {
		return tq, fmt.Errorf("tensor %s: %d values in, %d out", t.Name, len(a), len(b))
	}
	var ee, aa, bb, ab float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		ee += float64((x - y) * (x - y))
		aa += float64(x * x)
		bb += float64(y * y)
		ab += float64(x * y)
	}
	if aa > 0 {
		tq.RelMSE = ee / aa
	}
	if aa > 0 && bb > 0 {
		tq.Cosine = ab / math.Sqrt(aa*bb)
	}
	return tq, nil
}

func dequantizeAll(f *format.File, t *format.TensorInfo) ([]float32, error) {
	data, err := f.TensorData(t)
	if err != nil {
		return nil, err
	}
	x := make([]float32, t.Elements())
	if err := quant.DequantizeRow(t.Type, x, data); err != nil {
		return nil, fmt.Errorf("tensor %s: %w", t.Name, err)
	}
	return x, nil
}

// layerCount returns the number of layers of src as the converter counts
// them: the highest layer index of its tensors, or the architecture's
// block_count when larger.
func layerCount(src *format.File) int {
	n := 0
	for i := range src.Tensors {
		if _, place, layer := format.ClassifyTensor(src.Tensors[i].Name); place == format.PlaceLayer {
			n = max(n, layer+1)
		}
	}
	if bc, ok := src.Metadata.Uint(src.Architecture() + ".block_count"); ok && int(bc) > n && bc < 1<<20 {
		n = int(bc)
	}
	return n
}

// lz4ByType sums the LZ4-compressed sizes of the matrices by type.
func lz4ByType(ts []tensorQuality) []lz4Type {
	var out []lz4Type
	at := map[string]int{}
	for _, t := range ts {
		i, ok := at[t.Type]
		if !ok {
			i = len(out)
			at[t.Type] = i
			out = append(out, lz4Type{Type: t.Type})
		}
		out[i].Tensors++
		out[i].Bytes += t.size
		out[i].Compressed += t.lz4
	}
	for i := range out {
		if out[i].Bytes > 0 {
			out[i].Ratio = float64(out[i].Compressed) / float64(out[i].Bytes)
		}
	}
	return out
}

// Metadata keys of the quality report (docs/FORMAT.md).
const (
	mdQuantBPW       = "qsf.quantize.bpw"
	mdQuantTokens    = "qsf.quantize.calibration_tokens"
	mdQuantNames     = "qsf.quantize.tensor.names"
	mdQuantTypes     = "qsf.quantize.tensor.types"
	mdQuantTensorBPW = "qsf.quantize.tensor.bpw"
	mdQuantRelMSE    = "qsf.quantize.tensor.rel_mse"
	mdQuantCosine    = "qsf.quantize.tensor.cosine"
	mdQuantLayers    = "qsf.quantize.layer_importance"
)

// metadata returns the report as the output file's metadata keys, with
// the input's kind as qsf.source_format.
func (r *quantizeReport) metadata(kind string) *format.Metadata {
	md := &format.Metadata{}
	md.Set("qsf.source_format", format.StringValue(kind))
	md.Set("qsf.convert.type", format.StringValue(r.Type))
	md.Set(mdQuantBPW, format.Float32Value(float32(r.BPW)))
	md.Set(mdQuantTokens, format.Uint32Value(uint32(min(uint64(r.CalibrationTokens), math.MaxUint32))))
	n := len(r.Tensors)
	names, types := make([]string, n), make([]string, n)
	bpw, mse, cos := make([]float32, n), make([]float32, n), make([]float32, n)
	for i, t := range r.Tensors {
		names[i], types[i] = t.Name, t.Type
		bpw[i], mse[i], cos[i] = float32(t.BPW), float32(t.RelMSE), float32(t.Cosine)
	}
	md.Set(mdQuantNames, format.StringsValue(names))
	md.Set(mdQuantTypes, format.StringsValue(types))
	md.Set(mdQuantTensorBPW, format.Float32sValue(bpw))
	md.Set(mdQuantRelMSE, format.Float32sValue(mse))
	md.Set(mdQuantCosine, format.Float32sValue(cos))
	if r.LayerImportance != nil {
		imp := make([]float32, len(r.LayerImportance))
		for i, v := range r.LayerImportance {
			imp[i] = float32(v)
		}
		md.Set(mdQuantLayers, format.Float32sValue(imp))
	}
	return md
}

// print writes the report's tables: per tensor, per layer, per type.
func (r *quantizeReport) print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "tensor\ttype\tbpw\trel MSE\tcosine\t")
	for _, t := range r.Tensors {
		fmt.Fprintf(tw, "%s\t%s\t%.3f\t%.3g\t%.6f\t\n", t.Name, t.Type, t.BPW, t.RelMSE, t.Cosine)
	}
	tw.Flush()
	if r.LayerImportance != nil {
		fmt.Fprintln(tw, "layer\timportance (1 - cos in/out)\t")
		for i, v := range r.LayerImportance {
			fmt.Fprintf(tw, "%d\t%.5f\t\n", i, v)
		}
		tw.Flush()
	}
	if r.LZ4 != nil {
		fmt.Fprintln(tw, "type\tmatrices\tbytes\tlz4 bytes\tratio\t")
		for _, t := range r.LZ4 {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.3f\t\n", t.Type, t.Tensors, t.Bytes, t.Compressed, t.Ratio)
		}
		tw.Flush()
	}
}
