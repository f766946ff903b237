package convert

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/quant"
)

// llama2cConfig is the header of a llama2.c checkpoint: seven int32.
type llama2cConfig struct {
	Dim, Hidden, Layers, Heads, KVHeads, Vocab, SeqLen int32
}

const llama2cHeader = 7 * 4

// FromLlama2c converts a llama2.c checkpoint (model.bin) and its
// tokenizer.bin to the QSF file out, with the metadata llama.cpp's
// convert-llama2c-to-ggml writes. llama2.c's RoPE rotates interleaved
// pairs, llama.cpp's normal RoPE, so the weights need no permutation.
func FromLlama2c(bin, tokenizer, out string, opts Options) (*Result, error) {
	start := time.Now()
	f, err := os.Open(bin)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	p, err := planLlama2c(f, st.Size(), opts)
	if err != nil {
		return nil, fmt.Errorf("convert: %s: %w", bin, err)
	}
	tok, n, err := readLlama2cTokenizer(tokenizer, int(p.cfg.Header.Vocab))
	if err != nil {
		return nil, fmt.Errorf("convert: %s: %w", tokenizer, err)
	}
	p.cfg.Tokenizer = tok
	p.inBytes = st.Size() + n
	return write(p, out, opts, start)
}

func findLlama2cTokenizer(dir string) string {
	for _, pat := range []string{"tokenizer.bin", "tok*.bin"} {
		m, _ := filepath.Glob(filepath.Join(dir, pat))
		if len(m) > 0 {
			return m[0]
		}
	}
	return ""
}

func planLlama2c(r io.ReaderAt, size int64, opts Options) (*plan, error) {
	var hb [llama2cHeader]byte
	if _, err := r.ReadAt(hb[:], 0); err != nil {
		return nil, fmt.Errorf("%w: llama2.c header: %v", ErrInput, err)
	}
	var c llama2cConfig
	binary.Read(strings.NewReader(string(hb[:])), binary.LittleEndian, &c)
	shared := c.Vocab > 0
	vocab := c.Vocab
	if vocab < 0 {
		vocab = -vocab
	}
	for _, x := range []int32{c.Dim, c.Hidden, c.Layers, c.Heads, c.KVHeads, vocab, c.SeqLen} {
		if x <= 0 || x > 1<<20 {
			return nil, fmt.Errorf("%w: llama2.c header %+v out of range", ErrInput, c)
		}
	}
	if c.Dim%c.Heads != 0 || c.Heads%c.KVHeads != 0 {
		return nil, fmt.Errorf("%w: llama2.c header %+v: heads do not divide the width", ErrInput, c)
	}
	dim, hid, L, V := int64(c.Dim), int64(c.Hidden), int64(c.Layers), int64(vocab)
	hs := dim / int64(c.Heads)
	kvDim := int64(c.KVHeads) * hs
	// Offsets (in float32) of the weight arrays, in llama2.c order.
	var off int64
	tooBig := false
	next := func(n int64) int64 {
		// Every array must fit in the file; this also keeps the sum
		// from overflowing.
		tooBig = tooBig || n > size
		o := off
		off += min(n, size)
		return o
	}
	embd := next(V * dim)
	attNorm := next(L * dim)
	wq := next(L * dim * dim)
	wk := next(L * dim * kvDim)
	wv := next(L * dim * kvDim)
	wo := next(L * dim * dim)
	ffnNorm := next(L * dim)
	w1 := next(L * dim * hid)
	w2 := next(L * hid * dim)
	w3 := next(L * dim * hid)
	outNorm := next(dim)
	next(int64(c.SeqLen) * hs / 2) // freq_cis_real, unused
	next(int64(c.SeqLen) * hs / 2) // freq_cis_imag
	cls := embd
	if !shared {
		cls = next(V * dim)
	}
	if want := llama2cHeader + off*4; tooBig || size < want {
		return nil, fmt.Errorf("%w: llama2.c checkpoint of %d bytes is too small for its header %+v", ErrInput, size, c)
	}

	var h format.QSFHeader
	h.Arch, h.Activation, h.Norm, h.Position = format.ArchLlama, format.ActSiLU, format.NormRMS, format.PosRoPE
	h.HiddenDim, h.Heads, h.KVHeads, h.Vocab = uint32(dim), uint32(c.Heads), uint32(c.KVHeads), uint32(V)
	h.MaxSeqLen, h.FFNDim, h.HeadDim, h.RopeTheta = uint32(c.SeqLen), uint32(hid), uint32(hs), 10000
	h.BOS, h.EOS, h.PAD = 1, 2, -1
	md := &format.Metadata{}
	md.Set("general.name", format.StringValue("llama"))
	md.Set("general.source.format", format.StringValue("llama2.c"))
	p := &plan{kind: "llama2c", cfg: &format.QSFConfig{
		Header: h,
		Arch: format.ArchConfig{RopeDim: uint32(hs), RopeStyle: format.RopeNormal, NormEps: 1e-5,
			KeyDim: uint32(hs), ValueDim: uint32(hs), Features: format.FeatGatedFFN},
		Metadata: md,
	}}
	tensor := func(role format.Role, layer int, at int64, rows, cols int64) *source {
		shape := []uint64{uint64(cols)}
		if rows > 1 || role == format.RoleTokenEmbd || role == format.RoleOutput {
			shape = append(shape, uint64(rows))
		}
		base := llama2cHeader + at*4
		return &source{
			out:     format.QSFTensor{Role: role, Shape: shape, Type: outputType("", shape, quant.F32, opts, quant.F32)},
			srcType: quant.F32,
			rows: func(dst []byte, lo, hi int) ([]byte, error) {
				b := grow(dst, int64(hi-lo)*cols*4)
				_, err := r.ReadAt(b, base+int64(lo)*cols*4)
				return b, err
			},
		}
	}
	p.emb = []*source{tensor(format.RoleTokenEmbd, 0, embd, V, dim)}
	p.layers = make([][]*source, L)
	for l := range L {
		p.layers[l] = []*source{
			tensor(format.RoleAttnNorm, int(l), attNorm+l*dim, 1, dim),
			tensor(format.RoleQ, int(l), wq+l*dim*dim, dim, dim),
			tensor(format.RoleK, int(l), wk+l*dim*kvDim, kvDim, dim),
			tensor(format.RoleV, int(l), wv+l*dim*kvDim, kvDim, dim),
			tensor(format.RoleO, int(l), wo+l*dim*dim, dim, dim),
			tensor(format.RoleFFNNorm, int(l), ffnNorm+l*dim, 1, dim),
			tensor(format.RoleGate, int(l), w1+l*dim*hid, hid, dim),
			tensor(format.RoleDown, int(l), w2+l*hid*dim, dim, hid),
			tensor(format.RoleUp, int(l), w3+l*dim*hid, hid, dim),
		}
	}
	p.fin = []*source{tensor(format.RoleOutputNorm, 0, outNorm, 1, dim)}
	if !shared {
		p.fin = append(p.fin, tensor(format.RoleOutput, 0, cls, V, dim))
	}
	return p, nil
}

// readLlama2cTokenizer reads a llama2.c tokenizer.bin (max token length,
// then per token a float32 score, an int32 length and the bytes) into GGUF
// tokenizer keys as llama.cpp's converter writes them. It returns the keys
// and the file size.
func readLlama2cTokenizer(path string, vocab int) (*format.Metadata, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	md, err := parseLlama2cTokenizer(bufio.NewReader(f), st.Size(), vocab)
	return md, st.Size(), err
}

// parseLlama2cTokenizer reads the vocab tokens of a llama2.c tokenizer.bin
// of size bytes from br.
func parseLlama2cTokenizer(br io.Reader, size int64, vocab int) (*format.Metadata, error) {
	var maxLen int32
	if err := binary.Read(br, binary.LittleEndian, &maxLen); err != nil {
		return nil, fmt.Errorf("%w: tokenizer header: %v", ErrInput, err)
	}
	if int64(vocab)*8 > size {
		return nil, fmt.Errorf("%w: %d-byte tokenizer cannot hold %d tokens", ErrInput, size, vocab)
	}
	tokens := make([]string, vocab)
	scores := make([]float32, vocab)
	types := make([]int32, vocab)
	for i := range vocab {
		var rec struct {
			Score float32
			Len   int32
		}
		if err := binary.Read(br, binary.LittleEndian, &rec); err != nil {
			return nil, fmt.Errorf("%w: token %d: %v", ErrInput, i, err)
		}
		if rec.Len < 0 || int64(rec.Len) > size || math.IsNaN(float64(rec.Score)) {
			return nil, fmt.Errorf("%w: token %d: length %d", ErrInput, i, rec.Len)
		}
		b := make([]byte, rec.Len)
		if _, err := io.ReadFull(br, b); err != nil {
			return nil, fmt.Errorf("%w: token %d: %v", ErrInput, i, err)
		}
		text, typ := string(b), int32(1) // normal
		var hex byte
		switch {
		case i == 0:
			text, typ = "<unk>", 2 // unknown
		case i == 1:
			text, typ = "<s>", 3 // control
		case i == 2:
			text, typ = "</s>", 3
		case len(text) == 0:
			typ = 3
		case len(text) == 6 && func() bool { _, err := fmt.Sscanf(text, "<0x%02X>", &hex); return err == nil }():
			typ = 6 // byte
		}
		tokens[i] = strings.ReplaceAll(text, " ", "\u2581")
		scores[i], types[i] = rec.Score, typ
	}
	md := &format.Metadata{}
	md.Set("tokenizer.ggml.model", format.StringValue("llama"))
	md.Set("tokenizer.ggml.tokens", format.StringsValue(tokens))
	md.Set("tokenizer.ggml.scores", format.Float32sValue(scores))
	md.Set("tokenizer.ggml.token_type", format.Int32sValue(types))
	md.Set("tokenizer.ggml.unknown_token_id", format.Uint32Value(0))
	return md, nil
}
