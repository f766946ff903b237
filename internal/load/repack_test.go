package load

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/internal/testfiles"
	"github.com/qsf-llm/qsf/kernels"
	"github.com/qsf-llm/qsf/model"
	"github.com/qsf-llm/qsf/quant"
)

// TestRepackExpertGroups checks that repackWeights gives a stacked
// expert tensor the 16-row layout (Q4_0x16, on a tier with kernels for
// it) only when each expert's rows are whole groups of 16, since the
// model slices the tensor per expert: 24 rows an expert stay Q4_0x8,
// 32 become Q4_0x16, as does a plain matrix of 48 rows; the bytes are
// kernels.RepackTo's.
func TestRepackExpertGroups(t *testing.T) {
	tier, err := kernels.TierNamed("avx512")
	if err != nil {
		t.Skip("no avx512 tier on this CPU or build")
	}
	f, err := format.Open(testfiles.Path(t, "models", "gguf", "stories260K-f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const experts, cols = 4, 64
	r := rand.New(rand.NewPCG(7, 8))
	mk := func(name string, rows int) model.Tensor {
		rb, _ := quant.RowBytes(quant.Q4_0, cols)
		b := make([]byte, rows*rb)
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return model.Tensor{Name: name, Type: quant.Q4_0, Rows: rows, Cols: cols, Data: b}
	}
	x := &model.Experts{
		Router: model.Tensor{Name: "router", Type: quant.F32, Rows: experts, Cols: cols, Data: make([]byte, 4*experts*cols)},
		Gate:   mk("gate", experts*24),
		Up:     mk("up", experts*32),
		Down:   mk("down", experts*40),
	}
	w := &model.Weights{Blocks: []model.Block{{Q: mk("q", 48), Experts: x}}}
	want := map[*model.Tensor]quant.Type{&w.Blocks[0].Q: kernels.Q4_0x16, &x.Gate: kernels.Q4_0x8, &x.Up: kernels.Q4_0x16, &x.Down: kernels.Q4_0x8}
	src := map[*model.Tensor][]byte{}
	for m := range want {
		src[m] = bytes.Clone(m.Data)
	}
	if _, err := repackWeights(w, f, tier, true, false, nil); err != nil {
		t.Fatal(err)
	}
	for m, typ := range want {
		if m.Type != typ {
			t.Errorf("%s (%d rows): %v, want %v", m.Name, m.Rows, m.Type, typ)
			continue
		}
		packed := make([]byte, len(src[m]))
		if err := kernels.RepackTo(typ, packed, src[m], m.Rows, m.Cols); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(packed, m.Data) {
			t.Errorf("%s: bytes differ from kernels.RepackTo's", m.Name)
		}
	}
}
