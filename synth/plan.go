package synth

import (
	"fmt"
	"io"

	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/quant"
)

// Tensor is one tensor of a planned file.
type Tensor struct {
	Name  string
	Shape []uint64   // ggml order: Shape[0] is the row length
	Type  quant.Type // storage type
	Bytes int64      // size of the tensor's data
	Std   float64    // standard deviation of its weights; 0 means all ones

	layout layout
}

// Plan is a complete description of a synthetic model file: its metadata
// and its tensors. Write turns it into a GGUF file.
type Plan struct {
	Shape    Shape
	FileType FileType
	Seed     uint64
	Metadata *format.Metadata
	Tensors  []Tensor
}

// NewPlan lays out the file of shape s with the tensor types of ft and the
// weights drawn from seed.
func NewPlan(s Shape, ft FileType, seed uint64) (*Plan, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if _, ok := ft.baseType(); !ok {
		return nil, fmt.Errorf("%w: %d", ErrUnknownFileType, uint32(ft))
	}
	p := &Plan{Shape: s, FileType: ft, Seed: seed}
	for _, l := range s.tensors() {
		t, err := ft.tensorType(s, l)
		if err != nil {
			return nil, err
		}
		rb, err := quant.RowBytes(t, l.ne0)
		if err != nil {
			return nil, fmt.Errorf("synth: tensor %s: %w", l.name, err)
		}
		shape := []uint64{uint64(l.ne0)}
		if l.ne1 != 0 {
			shape = append(shape, uint64(l.ne1))
		}
		if l.ne2 != 0 {
			shape = append(shape, uint64(l.ne2))
		}
		p.Tensors = append(p.Tensors, Tensor{Name: l.name, Shape: shape, Type: t,
			Bytes: int64(rb) * int64(l.rows()), Std: l.std, layout: l})
	}
	md, err := metadata(s, ft, seed)
	if err != nil {
		return nil, err
	}
	p.Metadata = md
	return p, nil
}

// TensorBytes returns the total size of the tensor data, without the header
// and the alignment padding.
func (p *Plan) TensorBytes() int64 {
	var n int64
	for _, t := range p.Tensors {
		n += t.Bytes
	}
	return n
}

// TypeCounts returns how many tensors of each type the plan has.
func (p *Plan) TypeCounts() map[quant.Type]int {
	c := map[quant.Type]int{}
	for _, t := range p.Tensors {
		c[t.Type]++
	}
	return c
}

// FileSize returns the size of the file Write produces, computed without
// generating any weights.
func (p *Plan) FileSize() (int64, error) {
	var cw countWriter
	err := format.WriteGGUF(&cw, p.Metadata, p.writerTensors(), func(i int, w io.Writer) error {
		return skipBytes(w, p.Tensors[i].Bytes)
	})
	return cw.n, err
}

func (p *Plan) writerTensors() []format.WriterTensor {
	wt := make([]format.WriterTensor, len(p.Tensors))
	for i, t := range p.Tensors {
		wt[i] = format.WriterTensor{Name: t.Name, Shape: t.Shape, Type: t.Type}
	}
	return wt
}

// countWriter counts the bytes written to it.
type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// skipBytes writes n zero bytes to w.
func skipBytes(w io.Writer, n int64) error {
	var zero [64 << 10]byte
	for n > 0 {
		k := min(n, int64(len(zero)))
		if _, err := w.Write(zero[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// metadata returns the GGUF key/values of a synthetic model.
func metadata(s Shape, ft FileType, seed uint64) (*format.Metadata, error) {
	v, err := SPMVocab(s.Vocab)
	if err != nil {
		return nil, err
	}
	a := s.Arch + "."
	md := &format.Metadata{}
	u32 := func(key string, x int) { md.Set(key, format.Uint32Value(uint32(x))) }
	md.Set("general.architecture", format.StringValue(s.Arch))
	md.Set("general.name", format.StringValue(fmt.Sprintf("synthetic random weights (%s shape, %s, seed %d)", s.Name, ft, seed)))
	md.Set("general.description", format.StringValue("Normal random weights with standard deviation 1/sqrt(fan-in) written by qsf synth; not a trained model."))
	u32(a+"block_count", s.Layers)
	u32(a+"context_length", s.Context)
	u32(a+"embedding_length", s.Embd)
	u32(a+"feed_forward_length", s.FFN)
	u32(a+"attention.head_count", s.Heads)
	u32(a+"attention.head_count_kv", s.KVHeads)
	md.Set(a+"rope.freq_base", format.Float32Value(float32(s.RopeBase)))
	md.Set(a+"attention.layer_norm_rms_epsilon", format.Float32Value(float32(s.NormEps)))
	if s.Arch != "llama" || s.HeadDim*s.Heads != s.Embd {
		u32(a+"attention.key_length", s.HeadDim)
		u32(a+"attention.value_length", s.HeadDim)
	}
	u32("general.file_type", int(ft))
	u32(a+"vocab_size", s.Vocab)
	u32(a+"rope.dimension_count", s.HeadDim)
	if s.Experts > 0 {
		u32(a+"expert_count", s.Experts)
		u32(a+"expert_used_count", s.ExpertsUsed)
		if s.Arch != "llama" {
			u32(a+"expert_feed_forward_length", s.expertFFN())
		}
	}
	md.Set("tokenizer.ggml.model", format.StringValue("llama"))
	md.Set("tokenizer.ggml.tokens", format.StringsValue(v.Tokens))
	md.Set("tokenizer.ggml.scores", format.Float32sValue(v.Scores))
	md.Set("tokenizer.ggml.token_type", format.Int32sValue(v.Types))
	u32("tokenizer.ggml.bos_token_id", BOSID)
	u32("tokenizer.ggml.eos_token_id", EOSID)
	u32("tokenizer.ggml.unknown_token_id", UnknownID)
	md.Set("tokenizer.ggml.add_bos_token", format.BoolValue(true))
	md.Set("tokenizer.ggml.add_eos_token", format.BoolValue(false))
	if ft.quantized() {
		u32("general.quantization_version", 2)
	}
	return md, nil
}
