package model

import (
	"fmt"

	"github.com/qsf-llm/qsf/quant"
)

// Tensor is a weight as stored in the model file: Rows rows of Cols
// elements of Type, row-major, each row quant.RowBytes(Type, Cols) bytes.
// Data usually points into a read-only memory map and must not be written.
type Tensor struct {
	Name       string
	Type       quant.Type
	Rows, Cols int
	Data       []byte
	// Scale, when not 0, multiplies every product with the matrix: the
	// tensor scale of I2_S data converted at load (quant.ConvertI2S).
	Scale float32
	// Outliers, when not nil, is the matrix's outlier side table of
	// OutlierK pairs per row (quant.SplitOutliers), added to every
	// product with the matrix after its kernel (and Scale).
	Outliers []byte
	OutlierK int
}

// RowBytes returns the size of one row.
func (t *Tensor) RowBytes() int { return len(t.Data) / t.Rows }

// Slice returns rows [lo, hi) of t as a tensor sharing its data.
func (t *Tensor) Slice(lo, hi int) Tensor {
	rb := t.RowBytes()
	s := Tensor{Name: t.Name, Type: t.Type, Rows: hi - lo, Cols: t.Cols, Data: t.Data[lo*rb : hi*rb], Scale: t.Scale, OutlierK: t.OutlierK}
	if t.Outliers != nil {
		ob := t.OutlierK * quant.OutlierPairBytes
		s.Outliers = t.Outliers[lo*ob : hi*ob]
	}
	return s
}

// addOutliers adds t's outlier table, if any, to out = t·x.
func (t *Tensor) addOutliers(out, x []float32) {
	if t.Outliers != nil {
		quant.AddOutliers(out[:t.Rows], x[:t.Cols], t.Outliers, t.OutlierK)
	}
}

// Row decodes row i into dst (len Cols).
func (t *Tensor) Row(dst []float32, i int) {
	tr, _ := quant.Lookup(t.Type) // checked at load
	rb := t.RowBytes()
	tr.Dequantize(dst[:t.Cols], t.Data[i*rb:(i+1)*rb])
	if t.Outliers != nil {
		ob := t.OutlierK * quant.OutlierPairBytes
		quant.ApplyOutliers(dst[:t.Cols], t.Outliers[i*ob:(i+1)*ob], t.OutlierK, t.Cols)
	}
}

// Block holds the weights of one transformer layer. Optional tensors have
// a nil Data (matrices) or a nil slice (vectors).
type Block struct {
	AttnNorm, AttnNormB []float32
	Q, K, V             Tensor // separate projections, or
	QKV                 Tensor // one fused projection (Phi-3, GPT-2)
	QB, KB, VB          []float32
	QNorm, KNorm        []float32 // per-head RMSNorm of q and k (Qwen3)
	O                   Tensor
	OB                  []float32

	FFNNorm, FFNNormB []float32
	Gate, Up          Tensor // Gate absent (nil Data) for a plain MLP
	GateUp            Tensor // fused [gate; up] (Phi-3)
	UpB               []float32
	Down              Tensor
	DownB             []float32

	BitNet           // bitnet only (bitnet.go)
	Experts *Experts // the mixture-of-experts FFN, in place of the dense one
}

// Weights are all the tensors of a model, ready for the forward pass.
type Weights struct {
	TokenEmbd  Tensor
	PosEmbd    Tensor // learned positions (GPT-2), else empty
	Blocks     []Block
	OutNorm    []float32
	OutNormB   []float32
	Output     Tensor // the LM head; the token embedding when tied
	TiedOutput bool
}

// Lookup is how the model finds a tensor by its GGUF name. ok is false when
// the file has no such tensor.
type Lookup func(name string) (t Tensor, ok bool, err error)

// LoadWeights gathers the tensors the architecture of hp needs and checks
// their shapes and types.
func LoadWeights(hp *Hparams, lookup Lookup) (*Weights, error) {
	return LoadWeightsWith(hp, lookup, nil)
}

// LoadWeightsWith is LoadWeights that also reports every vector it decodes
// (norms, biases) to onVector, with the tensor's name and the []float32
// the Weights hold (fused biases are reported whole, before being split),
// so that a streaming loader can refill them later.
func LoadWeightsWith(hp *Hparams, lookup Lookup, onVector func(name string, v []float32)) (*Weights, error) {
	l := loader{hp: hp, lookup: lookup, onVector: onVector}
	w := &Weights{}
	w.TokenEmbd = l.matrix("token_embd.weight", hp.Vocab, hp.Embd, true)
	if hp.LearnedPos {
		w.PosEmbd = l.matrix("position_embd.weight", 0, hp.Embd, true)
	}
	w.OutNorm = l.vector("output_norm.weight", hp.Embd, true)
	if hp.LayerNorm {
		w.OutNormB = l.vector("output_norm.bias", hp.Embd, true)
	}
	if !hp.isBitNet() { // bitnet's LM head is always token_embd
		w.Output = l.matrix("output.weight", hp.Vocab, hp.Embd, false)
	}
	if w.Output.Data == nil {
		w.Output, w.TiedOutput = w.TokenEmbd, true
	}
	w.Blocks = make([]Block, hp.Layers)
	for i := range w.Blocks {
		l.block(&w.Blocks[i], i)
	}
	l.noOutliers(&w.TokenEmbd, &w.PosEmbd)
	if l.err != nil {
		return nil, l.err
	}
	return w, nil
}

type loader struct {
	hp       *Hparams
	lookup   Lookup
	onVector func(name string, v []float32)
	err      error
}

func (l *loader) get(name string, required bool) (Tensor, bool) {
	if l.err != nil {
		return Tensor{}, false
	}
	t, ok, err := l.lookup(name)
	if err != nil {
		l.err = fmt.Errorf("model: tensor %s: %w", name, err)
		return Tensor{}, false
	}
	if !ok {
		if required {
			l.err = fmt.Errorf("%w: %s (architecture %s)", ErrMissingTensor, name, l.hp.Arch)
		}
		return Tensor{}, false
	}
	if _, err := quant.Lookup(t.Type); err != nil {
		l.err = fmt.Errorf("model: tensor %s: %w", name, err)
		return Tensor{}, false
	}
	return t, true
}

// matrix fetches a 2-D weight of rows×cols (rows 0 = any).
func (l *loader) matrix(name string, rows, cols int, required bool) Tensor {
	t, ok := l.get(name, required)
	if !ok {
		return Tensor{}
	}
	if t.Cols != cols || (rows != 0 && t.Rows != rows) {
		l.err = fmt.Errorf("%w: %s is %d×%d, want %d×%d", ErrMetadata, name, t.Rows, t.Cols, rows, cols)
		return Tensor{}
	}
	l.outliers(&t)
	return t
}

// noOutliers fails the load when one of ts, matrices whose rows are
// looked up rather than multiplied (embeddings) or that the mixture of
// experts' kernels read directly, has an outlier table: it would not be
// applied.
func (l *loader) noOutliers(ts ...*Tensor) {
	for _, t := range ts {
		if l.err == nil && t.Outliers != nil {
			l.err = fmt.Errorf("%w: an outlier table for %s, whose rows are not multiplied by the dense mat-vec", quant.ErrUnsupported, t.Name)
		}
	}
}

// outliers attaches the outlier side table of t (the tensor named t.Name
// + quant.OutlierSuffix: I16, two elements per pair, a row per row of t),
// when the file has one.
func (l *loader) outliers(t *Tensor) {
	if l.err != nil {
		return
	}
	name := t.Name + quant.OutlierSuffix
	o, ok, err := l.lookup(name)
	if err != nil {
		l.err = fmt.Errorf("model: tensor %s: %w", name, err)
		return
	}
	if !ok {
		return
	}
	if o.Type != quant.I16 || o.Rows != t.Rows || o.Cols < 2 || o.Cols%2 != 0 {
		l.err = fmt.Errorf("%w: %s is %v %d×%d, want I16 with %d rows of column/value pairs", ErrMetadata, name, o.Type, o.Rows, o.Cols, t.Rows)
		return
	}
	if err := quant.CheckOutliers(o.Data, o.Cols/2, t.Rows, t.Cols); err != nil {
		l.err = fmt.Errorf("model: tensor %s: %w", name, err)
		return
	}
	t.Outliers, t.OutlierK = o.Data, o.Cols/2
}

// vector fetches a 1-D weight of n elements, decoded to float32.
func (l *loader) vector(name string, n int, required bool) []float32 {
	t, ok := l.get(name, required)
	if !ok {
		return nil
	}
	if t.Rows*t.Cols != n {
		l.err = fmt.Errorf("%w: %s has %d elements, want %d", ErrMetadata, name, t.Rows*t.Cols, n)
		return nil
	}
	v := make([]float32, n)
	tr, _ := quant.Lookup(t.Type)
	tr.Dequantize(v, t.Data)
	if l.onVector != nil {
		l.onVector(name, v)
	}
	return v
}

// Matrices returns pointers to the matrix fields of b, in a fixed order,
// so that a loader can point them at new data without knowing the
// architecture.
func (b *Block) Matrices() [9]*Tensor {
	return [9]*Tensor{&b.Q, &b.K, &b.V, &b.QKV, &b.O, &b.Gate, &b.Up, &b.GateUp, &b.Down}
}

func (l *loader) block(ly *Block, i int) {
	hp := l.hp
	p := fmt.Sprintf("blk.%d.", i)
	qd, kd, vd, e := hp.QDim(), hp.KDim(), hp.VDim(), hp.Embd

	ly.AttnNorm = l.vector(p+"attn_norm.weight", e, true)
	ly.FFNNorm = l.vector(p+"ffn_norm.weight", e, true)
	if hp.LayerNorm {
		ly.AttnNormB = l.vector(p+"attn_norm.bias", e, true)
		ly.FFNNormB = l.vector(p+"ffn_norm.bias", e, true)
	}

	if qkv, ok := l.get(p+"attn_qkv.weight", false); ok {
		ly.QKV = l.matrix(qkv.Name, qd+kd+vd, e, true)
		if b := l.vector(p+"attn_qkv.bias", qd+kd+vd, false); b != nil {
			ly.QB, ly.KB, ly.VB = b[:qd], b[qd:qd+kd], b[qd+kd:]
		}
	} else {
		ly.Q = l.matrix(p+"attn_q.weight", qd, e, true)
		ly.K = l.matrix(p+"attn_k.weight", kd, e, true)
		ly.V = l.matrix(p+"attn_v.weight", vd, e, true)
		ly.QB = l.vector(p+"attn_q.bias", qd, false)
		ly.KB = l.vector(p+"attn_k.bias", kd, false)
		ly.VB = l.vector(p+"attn_v.bias", vd, false)
	}
	ly.QNorm = l.vector(p+"attn_q_norm.weight", hp.HeadDimK, false)
	ly.KNorm = l.vector(p+"attn_k_norm.weight", hp.HeadDimK, false)
	ly.O = l.matrix(p+"attn_output.weight", e, hp.Heads*hp.HeadDimV, true)
	ly.OB = l.vector(p+"attn_output.bias", e, false)

	if hp.MoE.Experts > 0 {
		ly.Experts = l.experts(p)
		return
	}
	ly.Down = l.matrix(p+"ffn_down.weight", e, hp.FFN, true)
	ly.DownB = l.vector(p+"ffn_down.bias", e, false)
	if _, ok := l.get(p+"ffn_gate.weight", false); ok {
		ly.Gate = l.matrix(p+"ffn_gate.weight", hp.FFN, e, true)
		ly.Up = l.matrix(p+"ffn_up.weight", hp.FFN, e, true)
	} else if up, ok := l.get(p+"ffn_up.weight", true); ok && up.Rows == 2*hp.FFN {
		ly.GateUp = l.matrix(up.Name, 2*hp.FFN, e, true)
	} else {
		ly.Up = l.matrix(p+"ffn_up.weight", hp.FFN, e, true)
	}
	ly.UpB = l.vector(p+"ffn_up.bias", hp.FFN, false)
	l.bitnet(&ly.BitNet, p)
}
