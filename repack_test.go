package qsf

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/qsf-llm/qsf/arena"
	"github.com/qsf-llm/qsf/convert"
	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/internal/testfiles"
	"github.com/qsf-llm/qsf/kernels"
	"github.com/qsf-llm/qsf/model"
	"github.com/qsf-llm/qsf/quant"
)

// TestRepackSameLogits loads Q4_0 and Q8_0 files (stories260K and the
// synthetic architectures) and QSF_Q2R/Q3R/Q4R ones (stories260K padded)
// mapped and read into memory, with and without
// repacking, and requires that the repacked models hold repacked matrices
// and give the same logits bit for bit, for a prompt (the batched path)
// and token by token (the decode path).
func TestRepackSameLogits(t *testing.T) {
	files := []string{
		"models/gguf/stories260K-Q4_0.gguf",
		"models/gguf/stories260K-Q8_0.gguf",
		"models/synthetic/synth-qwen3-Q4_0.gguf",
		"models/synthetic/synth-gemma-Q8_0.gguf",
		"models/synthetic/synth-phi3-Q4_0.gguf",
		"models/synthetic/synth-gpt2-Q8_0.gguf",
	}
	prompt := []int{1, 20, 300, 41, 7, 99, 250, 3, 60, 12}
	x16s := 0 // Q4_0x16 matrices seen
	logits := func(path string, cfg Config) (batch, steps [][]float32, repacked int) {
		m, err := Load(path, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		for _, b := range m.net.Blocks {
			for _, w := range b.Matrices() {
				switch w.Type {
				case kernels.Q4_0x8, kernels.Q8_0x4, kernels.QSF_Q2Rx8, kernels.QSF_Q3Rx8, kernels.QSF_Q4Rx8:
					repacked++
				case kernels.Q4_0x16:
					repacked++
					x16s++
				}
			}
		}
		ctx := context.Background()
		s, err := m.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		l, err := s.Forward(ctx, prompt)
		if err != nil {
			t.Fatal(err)
		}
		batch = append(batch, l)
		s2, _ := m.NewSession()
		for _, id := range prompt {
			l, err := s2.Forward(ctx, []int{id})
			if err != nil {
				t.Fatal(err)
			}
			steps = append(steps, l)
		}
		return batch, steps, repacked
	}
	// QSF files too: uncompressed (repacked from the mapping) and LZ4
	// (records in memory, which stay in the file's layout).
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		comp format.Compression
	}{{"plain.qsf", format.CompressNone}, {"lz4.qsf", format.CompressLZ4}} {
		out := filepath.Join(dir, c.name)
		if _, err := convert.Convert(testfiles.Path(t, "models/gguf/stories260K-Q8_0.gguf"), out, convert.Options{Compression: c.comp}); err != nil {
			t.Fatal(err)
		}
		files = append(files, out)
	}
	// QSF's rotated types, repacked where the tier has kernels for their
	// x8 layouts (avx512 with VBMI).
	tier, err := kernels.TierNamed(os.Getenv("QSF_KERNEL")) // Load's tier
	if err != nil {
		t.Fatal(err)
	}
	_, rotNative := tier.RepackType(quant.QSF_Q4R, 8, 64)
	x16Native := false
	if typ, _ := tier.RepackType(quant.Q4_0, 16, 32); typ == kernels.Q4_0x16 {
		x16Native = true
	}
	var rotFiles []string
	for _, typ := range []quant.Type{quant.QSF_Q2R, quant.QSF_Q3R, quant.QSF_Q4R} {
		out := filepath.Join(dir, typ.String()+".qsf")
		if _, err := convert.Convert(testfiles.Path(t, "models/gguf/stories260K-pad256-f32.gguf"), out, convert.Options{Type: typ, Requantize: true}); err != nil {
			t.Fatal(err)
		}
		files = append(files, out)
		rotFiles = append(rotFiles, out)
	}
	for _, name := range files {
		path := name
		if !filepath.IsAbs(name) {
			path = testfiles.Path(t, name)
		}
		lz4 := strings.HasSuffix(name, "lz4.qsf")
		for _, noMmap := range []bool{false, true} {
			wantB, wantS, n := logits(path, Config{Threads: 2, ContextLength: 64, NoMmap: noMmap, NoRepack: true})
			if n != 0 {
				t.Fatalf("%s: NoRepack left %d repacked matrices", name, n)
			}
			gotB, gotS, n := logits(path, Config{Threads: 2, ContextLength: 64, NoMmap: noMmap})
			inMemoryQSF := lz4 || (noMmap && strings.HasSuffix(name, ".qsf")) || (!rotNative && slices.Contains(rotFiles, name))
			if n == 0 && !inMemoryQSF {
				t.Errorf("%s (NoMmap %v): no matrix was repacked", name, noMmap)
			}
			if n != 0 && inMemoryQSF {
				t.Errorf("%s (NoMmap %v): %d matrices of QSF records in memory were repacked", name, noMmap, n)
			}
			for i, pair := range [][2][][]float32{{gotB, wantB}, {gotS, wantS}} {
				for k := range pair[0] {
					for j := range pair[0][k] {
						if math.Float32bits(pair[0][k][j]) != math.Float32bits(pair[1][k][j]) {
							t.Fatalf("%s (NoMmap %v, %s, step %d): logit %d is %g repacked, %g not",
								name, noMmap, [...]string{"prompt", "decode"}[i], k, j, pair[0][k][j], pair[1][k][j])
						}
					}
				}
			}
		}
	}
	// The Q4_0 files' matrices of 16-row groups become Q4_0x16 where the
	// tier has kernels for it (avx512), and only there.
	if (x16s > 0) != x16Native {
		t.Errorf("%d Q4_0x16 matrices loaded; tier %s has kernels for them: %v", x16s, tier.Name(), x16Native)
	}
}

// TestF32HugeCopy checks that a resident model's mapped F32 matrices go
// into the arena where the tier reads them faster there, packed as
// kernels.F32H (the avx512 tier with VBMI) or, with huge pages on
// request, copied as they are (left in the mapping with NoRepack or under
// a RAM budget), that the token embedding stays mapped, and that the
// logits are the same bit for bit.
func TestF32HugeCopy(t *testing.T) {
	path := testfiles.Path(t, "models/synthetic/synth-llama-f32.gguf")
	prompt := []int{1, 20, 300, 41, 7, 99, 250, 3, 60, 12}
	type counts struct{ copied, packed, mapped int }
	var tier *kernels.Tier // the models' tier
	run := func(cfg Config) (logits []float32, c counts) {
		m, err := Load(path, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		tier = m.tier
		for _, b := range m.net.Blocks {
			for _, w := range b.Matrices() {
				switch {
				case w.Type == kernels.F32H:
					c.packed++
					if m.file.IsMapped(w.Data) {
						t.Errorf("%+v: %s is F32H in the mapping", cfg, w.Name)
					}
				case w.Type != quant.F32 || len(w.Data) == 0:
				case m.file.IsMapped(w.Data):
					c.mapped++
				default:
					c.copied++
				}
			}
		}
		if !m.file.IsMapped(m.net.TokenEmbd.Data) {
			t.Errorf("%+v: the token embedding left the mapping", cfg)
		}
		s, err := m.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		l, err := s.Forward(context.Background(), prompt)
		if err != nil {
			t.Fatal(err)
		}
		return l, c
	}
	want, c := run(Config{Threads: 1, ContextLength: 64, NoRepack: true})
	if c.copied != 0 || c.packed != 0 {
		t.Fatalf("NoRepack copied %d F32 matrices, packed %d", c.copied, c.packed)
	}
	if _, c := run(Config{Threads: 1, ContextLength: 64, RAMBudget: 1 << 30}); c.copied != 0 || c.packed != 0 {
		t.Errorf("a RAM budget copied %d F32 matrices, packed %d", c.copied, c.packed)
	}
	got, c := run(Config{Threads: 1, ContextLength: 64})
	packs := tier.PacksF32H(256) && tier.PacksF32H(512) // the model's rows
	switch {
	case packs && (c.packed == 0 || c.copied+c.mapped != 0):
		t.Errorf("%+v: want all F32 matrices packed as F32H", c)
	case !packs && arena.HugePages && (c.copied == 0 || c.mapped != 0):
		t.Errorf("%+v: want all F32 matrices copied", c)
	case !packs && !arena.HugePages && c.copied+c.packed != 0:
		t.Errorf("%+v: F32 matrices copied without huge pages", c)
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("logit %d is %g in the arena, %g mapped", i, got[i], want[i])
		}
	}
}

// TestHugeCopyMapped checks that a resident model without a RAM budget
// keeps none of its blocks' matrices or its LM head in the file's
// mapping where huge pages are on request (Linux): those its tier
// repacks and those it does not (K-quants on the amd64 tiers) alike go
// into the arena, while NoRepack and a RAM budget leave the unrepacked
// ones mapped; and that the logits are the same bit for bit.
func TestHugeCopyMapped(t *testing.T) {
	path := testfiles.Path(t, "models/gguf/stories260K-pad256-Q4_K_M.gguf")
	prompt := []int{1, 20, 300, 41, 7, 99, 250, 3, 60, 12}
	run := func(cfg Config) (logits []float32, mapped, total int) {
		m, err := Load(path, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		var ws []*model.Tensor
		for _, b := range m.net.Blocks {
			mats := b.Matrices()
			ws = append(ws, mats[:]...)
		}
		if !m.net.TiedOutput {
			ws = append(ws, &m.net.Output)
		}
		for _, w := range ws {
			if len(w.Data) == 0 {
				continue
			}
			total++
			if m.file.IsMapped(w.Data) {
				mapped++
			}
		}
		s, err := m.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		l, err := s.Forward(context.Background(), prompt)
		if err != nil {
			t.Fatal(err)
		}
		return l, mapped, total
	}
	want, mapped, total := run(Config{Threads: 1, ContextLength: 64, NoRepack: true})
	if mapped != total {
		t.Fatalf("NoRepack: %d of %d matrices mapped, want all", mapped, total)
	}
	if _, mapped, _ := run(Config{Threads: 1, ContextLength: 64, RAMBudget: 1 << 30}); mapped == 0 {
		t.Errorf("a RAM budget moved every matrix out of the mapping")
	}
	got, mapped, total := run(Config{Threads: 1, ContextLength: 64})
	switch {
	case arena.HugePages && mapped != 0:
		t.Errorf("%d of %d matrices left in the mapping without a budget, want none", mapped, total)
	case !arena.HugePages && mapped == 0:
		t.Errorf("every matrix copied without huge pages")
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("logit %d is %g in the arena, %g mapped", i, got[i], want[i])
		}
	}
}
