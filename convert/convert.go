// Package convert turns model files into QSF files: GGUF files (keeping
// every tensor's type or re-quantizing), Hugging Face model directories
// (config.json, safetensors, tokenizer.json) and llama2.c checkpoints.
//
// Conversion streams: the output is written layer by layer, each tensor is
// converted a block of rows at a time, and only the layer being written is
// held in memory (twice when it is compressed).
package convert

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/internal/atomicfile"
	"github.com/qsf-llm/qsf/quant"
)

// ErrUnsupported is returned for an input the converters cannot handle: an
// unknown architecture, tensor dtype or layout, or a tokenizer they cannot
// translate.
var ErrUnsupported = errors.New("convert: unsupported input")

// ErrInput is returned for a malformed input: a bad safetensors header,
// inconsistent shapes, a truncated checkpoint.
var ErrInput = errors.New("convert: malformed input")

// Options adjust a conversion.
type Options struct {
	// Type, when not zero-valued with Requantize set, is the tensor type
	// for every matrix whose row length allows it; vectors (norms,
	// biases) stay in their float type. Without Requantize, GGUF tensors
	// keep their type and other inputs keep their float dtype.
	Type       quant.Type
	Requantize bool
	// Compression of the layers.
	Compression format.Compression
	// Threads converting rows in parallel (1 when zero).
	Threads int
	// Tokenizer is the llama2.c tokenizer.bin for a llama2.c checkpoint;
	// when empty, tokenizer.bin or tok*.bin beside the checkpoint is used.
	Tokenizer string
	// TensorTypes, when not nil, overrides Type for the GGUF tensors it
	// names (matrices only; the row length must fit the type's blocks).
	TensorTypes map[string]quant.Type
	// Fallback, when not F32 (the zero value), is the type of a matrix
	// whose row length does not fit the requested type's blocks; F32
	// keeps such a matrix in its input type.
	Fallback quant.Type
	// Importance, when not nil, returns the per-column importance of the
	// GGUF tensor named (nil when unknown): each re-quantized row is
	// encoded with quant.QuantizeRowImportance, which QSF's own types use
	// to minimise the importance-weighted error.
	Importance func(name string) []float32
	// QuantizeMatrix, when not nil, is offered every re-quantized matrix
	// whole (rows×cols float32 values, row-major): it returns the
	// encoded rows of type typ, or nil to let the rows be quantized one
	// at a time as usual. A quantizer that couples the rows' columns
	// (quant.QuantizeGPTQ) needs the whole matrix.
	QuantizeMatrix func(name string, typ quant.Type, rows, cols int, src []float32) ([]byte, error)
	// Outliers, when not nil, returns how many entries per row of the
	// named re-quantized layer matrix (rows×cols) to keep in an outlier
	// side table (quant.SplitOutliers), 0 for none. The table is written
	// as the tensor name+quant.OutlierSuffix right after the matrix, and
	// the matrix is quantized (by QuantizeMatrix, or row by row) with
	// what the table leaves of its entries.
	Outliers func(name string, rows, cols int) int
	// Metadata, when not nil, holds key/values set in the output's
	// metadata after the converter's own (a key given here replaces the
	// input's and the converter's value).
	Metadata *format.Metadata
	// LayerImportance, when not nil, holds one score per layer for the
	// layer index's importance field (format.LayerEntry.Importance); nil
	// leaves every score 0.
	LayerImportance []float32
	// Progress, when not nil, is called after each layer is written.
	Progress func(layer, layers int, e format.LayerEntry)

	ctx context.Context // set by ConvertContext; nil means never cancelled
}

// Result summarizes a conversion.
type Result struct {
	Input       string // "gguf", "hf" or "llama2c"
	InputBytes  int64  // size of the input files
	OutputBytes int64
	Header      format.QSFHeader
	Layers      []format.LayerEntry
	Duration    time.Duration
}

// Convert converts in to the QSF file out, detecting the input kind: a
// directory is a Hugging Face model, a file starting with "GGUF" a GGUF
// file, one starting with "QSF1" a QSF file (written again as FromGGUF
// says), a file named *.safetensors the Hugging Face model of its
// directory, anything else a llama2.c checkpoint.
//
// Every converter writes a temporary file beside out and renames it to out
// when it is complete: on error nothing is left under either name.
func Convert(in, out string, opts Options) (*Result, error) {
	return ConvertContext(context.Background(), in, out, opts)
}

// ConvertContext is Convert stopped by ctx: once ctx is done, the
// conversion stops at its next write, removes its temporary file and
// returns ctx's error.
func ConvertContext(ctx context.Context, in, out string, opts Options) (*Result, error) {
	opts.ctx = ctx
	st, err := os.Stat(in)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return FromHF(in, out, opts)
	}
	if strings.HasSuffix(in, ".safetensors") {
		// A safetensors file of a Hugging Face model: its directory is.
		if _, err := os.Stat(filepath.Join(filepath.Dir(in), "config.json")); err == nil {
			return FromHF(filepath.Dir(in), out, opts)
		}
		return nil, fmt.Errorf("%w: %s: a safetensors file needs the model's config.json beside it", ErrUnsupported, in)
	}
	f, err := os.Open(in)
	if err != nil {
		return nil, err
	}
	var magic [4]byte
	_, err = io.ReadFull(f, magic[:])
	f.Close()
	if err == nil && (string(magic[:]) == format.Magic || string(magic[:]) == format.QSFMagic) {
		return FromGGUF(in, out, opts)
	}
	tok := opts.Tokenizer
	if tok == "" {
		tok = findLlama2cTokenizer(filepath.Dir(in))
		if tok == "" {
			return nil, fmt.Errorf("convert: %s: not GGUF; as a llama2.c checkpoint it needs a tokenizer.bin (none found beside it)", in)
		}
	}
	return FromLlama2c(in, tok, out, opts)
}

// source is a tensor to write and where its data comes from.
type source struct {
	out     format.QSFTensor // role, name, shape and output type
	srcType quant.Type
	// rows reads the raw bytes of source rows [lo, hi) in srcType into
	// dst (reallocated when too small) and returns them.
	rows func(dst []byte, lo, hi int) ([]byte, error)
	// perm, when not nil, maps an output row to its source row.
	perm func(i int) int
	// f32, when not nil, returns the whole tensor as float32 in output
	// row order (used for transposed weights); rows is then unused.
	f32 func() ([]float32, error)
	// outliers, when not nil, makes this the outlier table of the
	// matrix before it (Options.Outliers).
	outliers *outlierSplit
}

// outlierSplit is an outlier table to write: k pairs per row of matrix.
type outlierSplit struct {
	matrix string
	k      int
}

// splitOutliers returns a whole-matrix quantizer for s that first splits
// k outliers per row off the matrix into tables[s's name], then quantizes
// what is left with next (when it returns data) or row by row.
func splitOutliers(s *source, k, threads int, importance []float32, next func(rows, cols int, src []float32) ([]byte, error), tables map[string][]byte) func(rows, cols int, src []float32) ([]byte, error) {
	return func(rows, cols int, src []float32) ([]byte, error) {
		t := make([]byte, rows*k*quant.OutlierPairBytes)
		rb := k * quant.OutlierPairBytes
		for r := range rows {
			if err := quant.SplitOutliers(t[r*rb:(r+1)*rb], src[r*cols:(r+1)*cols], importance, k); err != nil {
				return nil, err
			}
		}
		tables[s.out.Name] = t
		if next != nil {
			b, err := next(rows, cols, src)
			if b != nil || err != nil {
				return b, err
			}
		}
		outRow, err := quant.RowBytes(s.out.Type, cols)
		if err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		buf.Grow(rows * outRow)
		err = convertChunks(&buf, rows, cols, outRow, s.out.Type, threads, importance, func(dst []float32, _ *[]byte, r int) error {
			copy(dst, src[r*cols:(r+1)*cols])
			return nil
		})
		return buf.Bytes(), err
	}
}

// plan is a model ready to write.
type plan struct {
	kind     string
	inBytes  int64
	cfg      *format.QSFConfig
	emb, fin []*source
	layers   [][]*source
}

func (p *plan) tensors(ss []*source) []format.QSFTensor {
	out := make([]format.QSFTensor, len(ss))
	for i, s := range ss {
		out[i] = s.out
	}
	return out
}

// features derives the informational ARCH feature bits from the tensors
// of layer 0.
func features(p *plan, base uint16) uint16 {
	f := base
	if len(p.layers) == 0 {
		return f
	}
	has := map[format.Role]bool{}
	for _, s := range p.layers[0] {
		has[s.out.Role] = true
	}
	set := func(bit uint16, on bool) {
		if on {
			f |= bit
		} else {
			f &^= bit
		}
	}
	set(format.FeatQKNorm, has[format.RoleQNorm])
	set(format.FeatQKVBias, has[format.RoleQB] || has[format.RoleQKVB])
	set(format.FeatOutBias, has[format.RoleOB])
	set(format.FeatFFNBias, has[format.RoleUpB] || has[format.RoleDownB])
	set(format.FeatFusedQKV, has[format.RoleQKV])
	set(format.FeatGatedFFN, has[format.RoleGate] || f&format.FeatGatedFFN != 0 && !has[format.RoleUp])
	return f
}

// outputType picks the stored type of a tensor.
func outputType(name string, shape []uint64, src quant.Type, opts Options, floatDefault quant.Type) quant.Type {
	if len(shape) < 2 {
		if src == quant.F16 || src == quant.BF16 {
			return quant.F32 // norms and biases in F32, as llama.cpp does
		}
		return src
	}
	if strings.HasSuffix(name, quant.OutlierSuffix) {
		return src // an outlier table (quant.SplitOutliers) is copied as it is
	}
	want := floatDefault
	if opts.Requantize {
		want = opts.Type
		if t, ok := opts.TensorTypes[name]; ok {
			want = t
		}
	}
	if want == src {
		return src
	}
	if _, err := quant.Lookup(src); err != nil {
		return src // cannot decode the source
	}
	if fits(want, shape[0]) {
		return want
	}
	if opts.Requantize && opts.Fallback != quant.F32 && fits(opts.Fallback, shape[0]) {
		return opts.Fallback
	}
	return src // the row length does not fit the type's blocks
}

// fits reports whether t can be quantized to and rows of cols elements
// are whole blocks of it.
func fits(t quant.Type, cols uint64) bool {
	tr, err := quant.Lookup(t)
	return err == nil && tr.QuantizeRef != nil && cols%uint64(tr.BlockSize) == 0
}

// write converts p into the QSF file out.
func write(p *plan, out string, opts Options, start time.Time) (*Result, error) {
	if p.cfg.Metadata == nil {
		p.cfg.Metadata = &format.Metadata{}
	}
	md := p.cfg.Metadata
	md.Set("qsf.source_format", format.StringValue(p.kind))
	if opts.Requantize {
		md.Set("qsf.convert.type", format.StringValue(opts.Type.String()))
	}
	md.Set("qsf.convert.compression", format.StringValue(opts.Compression.String()))
	if opts.Metadata != nil {
		for k, v := range opts.Metadata.All() {
			md.Set(k, v)
		}
	}
	if opts.LayerImportance != nil && len(opts.LayerImportance) != len(p.layers) {
		return nil, fmt.Errorf("convert: %d layer importance scores for %d layers", len(opts.LayerImportance), len(p.layers))
	}
	// Outlier tables: a companion source after each matrix that has one;
	// its bytes are made while the matrix is quantized.
	tables := map[string][]byte{}
	if opts.Outliers != nil && opts.Requantize {
		for l, ss := range p.layers {
			var out []*source
			for _, s := range ss {
				out = append(out, s)
				if len(s.out.Shape) != 2 || s.out.Type == s.srcType || strings.HasSuffix(s.out.Name, "_exps.weight") {
					continue
				}
				rows, cols := int(s.out.Rows()), int(s.out.Cols())
				k := opts.Outliers(s.out.Name, rows, cols)
				if k <= 0 {
					continue
				}
				if k > cols || cols > quant.MaxOutlierCols {
					return nil, fmt.Errorf("convert: %s: %d outliers per row of %d columns: %w", s.out.Name, k, cols, quant.ErrOutliers)
				}
				name := s.out.Name + quant.OutlierSuffix
				out = append(out, &source{
					out:     format.QSFTensor{Role: format.RoleNamed, Name: name, Shape: []uint64{uint64(2 * k), uint64(rows)}, Type: quant.I16, Size: uint64(rows * k * quant.OutlierPairBytes)},
					srcType: quant.I16,
					outliers: &outlierSplit{
						matrix: s.out.Name, k: k,
					},
				})
			}
			p.layers[l] = out
		}
	}
	m := &format.QSFModel{
		Header: p.cfg.Header, Arch: p.cfg.Arch, Tokenizer: p.cfg.Tokenizer, Metadata: md,
		Embedding: p.tensors(p.emb), Final: p.tensors(p.fin),
	}
	for _, l := range p.layers {
		m.Layers = append(m.Layers, p.tensors(l))
	}
	ctx := opts.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	f, err := atomicfile.Create(ctx, out)
	if err != nil {
		return nil, err
	}
	defer f.Abort()
	threads := max(opts.Threads, 1)
	var scratch []byte
	data := func(place format.QSFPlacement, layer, i int, w io.Writer) error {
		var s *source
		switch place {
		case format.PlaceEmbedding:
			s = p.emb[i]
		case format.PlaceFinal:
			s = p.fin[i]
		default:
			s = p.layers[layer][i]
		}
		var importance []float32
		if opts.Importance != nil && s.out.Type != s.srcType && len(s.out.Shape) == 2 {
			importance = opts.Importance(s.out.Name)
			if importance != nil && uint64(len(importance)) != s.out.Cols() {
				return fmt.Errorf("%w: importance of %s has %d columns, the tensor %d", ErrInput, s.out.Name, len(importance), s.out.Cols())
			}
		}
		if s.outliers != nil {
			t, ok := tables[s.outliers.matrix]
			if !ok || uint64(len(t)) != s.out.Size {
				return fmt.Errorf("convert: outlier table of %s not made", s.outliers.matrix)
			}
			delete(tables, s.outliers.matrix)
			_, err := w.Write(t)
			return err
		}
		var whole func(rows, cols int, src []float32) ([]byte, error)
		if opts.QuantizeMatrix != nil && s.out.Type != s.srcType && len(s.out.Shape) == 2 {
			whole = func(rows, cols int, src []float32) ([]byte, error) {
				return opts.QuantizeMatrix(s.out.Name, s.out.Type, rows, cols, src)
			}
		}
		if place == format.PlaceLayer && i+1 < len(p.layers[layer]) {
			if o := p.layers[layer][i+1].outliers; o != nil && o.matrix == s.out.Name {
				whole = splitOutliers(s, o.k, threads, importance, whole, tables)
			}
		}
		return writeTensor(w, s, threads, importance, whole, &scratch)
	}
	wopts := format.QSFWriteOptions{Compression: opts.Compression, LayerImportance: opts.LayerImportance}
	if opts.Progress != nil {
		n := len(p.layers)
		wopts.LayerDone = func(i int, e format.LayerEntry) { opts.Progress(i, n, e) }
	}
	hdr, entries, err := format.WriteQSF(f, m, data, wopts)
	if err != nil {
		return nil, fmt.Errorf("convert: %s: %w", out, err)
	}
	if err := f.Commit(); err != nil {
		return nil, fmt.Errorf("convert: %s: %w", out, err)
	}
	return &Result{
		Input: p.kind, InputBytes: p.inBytes, OutputBytes: int64(hdr.FileSize),
		Header: *hdr, Layers: entries, Duration: time.Since(start),
	}, nil
}
