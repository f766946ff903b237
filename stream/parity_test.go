package stream_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/arena"
	"github.com/qsf-llm/qsf/convert"
	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/kernels"
	"github.com/qsf-llm/qsf/model"
	"github.com/qsf-llm/qsf/plan"
	"github.com/qsf-llm/qsf/stream"
)

// TestQSFStreamingMatchesResident converts stories260K to QSF with LZ4
// layers and streams it under the smallest budget the planner accepts:
// the logits are bit-identical to the resident GGUF's.
func TestQSFStreamingMatchesResident(t *testing.T) {
	gguf := testdata(t)
	path := filepath.Join(t.TempDir(), "stories260K-lz4.qsf")
	if _, err := convert.FromGGUF(gguf, path, convert.Options{Compression: format.CompressLZ4}); err != nil {
		t.Fatal(err)
	}
	// An explicit context and KV type, so the smallest plan degrades only
	// the buffers (a lower KV precision would change the logits).
	cfg := smallestBudget(t, path, qsf.Config{ContextLength: 64, KVType: "f32", Threads: 2})
	ids := []int{1, 403, 407, 261, 378, 131, 306, 261}
	want := sessionLogits(t, gguf, qsf.Config{ContextLength: 64, Threads: 2}, ids)
	got := sessionLogits(t, path, cfg, ids)
	for i := range want {
		for j := range want[i] {
			if got[i][j] != want[i][j] {
				t.Fatalf("token %d logit %d: QSF streaming %v, GGUF resident %v", i, j, got[i][j], want[i][j])
			}
		}
	}
}

// smallestBudget returns cfg with the smallest RAM budget the planner
// accepts for the file at path.
func smallestBudget(t *testing.T, path string, cfg qsf.Config) qsf.Config {
	t.Helper()
	cfg.RAMBudget = 1
	_, err := qsf.PlanFile(path, cfg)
	var be *plan.BudgetError
	if !errors.As(err, &be) {
		t.Fatalf("plan with a 1-byte budget: %v, want a BudgetError", err)
	}
	cfg.RAMBudget = be.Min
	return cfg
}

func sessionLogits(t *testing.T, path string, cfg qsf.Config, ids []int) [][]float32 {
	t.Helper()
	m, err := qsf.Load(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if cfg.RAMBudget > 0 && !m.Streaming() {
		t.Fatalf("budget %d did not force streaming", cfg.RAMBudget)
	}
	s, err := m.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out [][]float32
	for _, id := range ids {
		l, err := s.Forward(t.Context(), []int{id})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	if cfg.RAMBudget > 0 && s.IOStats().BytesRead == 0 {
		t.Fatal("streaming session read nothing")
	}
	return out
}

// TestStreamingDecodeAllocs checks that a warm streaming decode step
// (layers and LM head read through the ring, embedding rows through the
// LRU) allocates nothing, with rings of two layers, one layer and the
// smallest, the file mapped or copied; and that mapped and copied give the
// same logits.
func TestStreamingDecodeAllocs(t *testing.T) {
	path := testdata(t)
	for _, ring := range []string{"two layers", "one layer", "smallest"} {
		var logits [2][]float32
		for i, copied := range []bool{false, true} {
			name := fmt.Sprintf("ring %s, copied %v", ring, copied)
			st, src := streamingState(t, path, func(lay *stream.Layout) stream.Options {
				rb := map[string]int{"two layers": 2 * lay.LayerBytes(), "one layer": lay.LayerBytes(), "smallest": lay.MinRingBytes()}[ring]
				if !copied {
					rb += stream.MapSlack // a mapped ring keeps MapSlack for the pages mapped past its pieces
				}
				return stream.Options{RingBytes: rb, EmbedRows: 4, Copy: copied}
			})
			if src.Mapped() == copied && runtime.GOOS == "linux" {
				t.Fatalf("%s: Mapped() = %v", name, src.Mapped())
			}
			pos := 0
			step := func() {
				if err := st.Forward(100+pos%7, pos, true); err != nil {
					t.Fatal(err)
				}
				pos++
			}
			for range 8 {
				step()
			}
			if n := testing.AllocsPerRun(20, step); n != 0 {
				t.Errorf("%s: %v allocations per decode step, want 0", name, n)
			}
			if src.Stats().BytesRead == 0 {
				t.Fatalf("%s: nothing read", name)
			}
			logits[i] = slices.Clone(st.Logits)
		}
		if !slices.Equal(logits[0], logits[1]) {
			t.Errorf("ring %s: mapped and copied logits differ", ring)
		}
	}
}

// streamingState opens path for streaming with the options opts returns
// for its layout and returns a 64-slot State that reads its weights from
// the Source, with the LM head streamed; everything is closed at the end
// of the test.
func streamingState(t *testing.T, path string, opts func(*stream.Layout) stream.Options) (*model.State, *stream.Source) {
	t.Helper()
	f, err := format.OpenWith(path, format.OpenOptions{NoMmap: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	embd, _ := f.Tensor("token_embd.weight")
	hp, err := model.ParseHparams(&f.Metadata, embd.Rows())
	if err != nil {
		t.Fatal(err)
	}
	lay, err := stream.NewLayout(f, &hp)
	if err != nil {
		t.Fatal(err)
	}
	const ctx = 64
	o := opts(lay)
	a, err := arena.New(int(stream.BufferBytes(lay, o) + model.StateBytes(&hp, ctx) + 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	src, err := stream.Open(lay, path, a, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	pool := kernels.NewPool(2)
	t.Cleanup(pool.Close)
	net := &model.Model{Hparams: hp, Weights: lay.Weights}
	st, err := net.NewStateWith(pool, model.StateOptions{Capacity: ctx, Alloc: func(name string, n int) []byte {
		b, err := a.Alloc(name, n)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}})
	if err != nil {
		t.Fatal(err)
	}
	st.Source = src
	if src.HeadChunks() == 0 {
		t.Fatal("the LM head is resident; want it streamed")
	}
	return st, src
}

// TestQSFStreamingChecksRecordCRC streams stories260K converted to QSF
// without compression, whose layers are read a matrix at a time: the
// logits equal the resident GGUF's, and a byte flipped in a layer record,
// inside a matrix or between two (a norm), fails the token with
// format.ErrChecksum.
func TestQSFStreamingChecksRecordCRC(t *testing.T) {
	gguf := testdata(t)
	path := filepath.Join(t.TempDir(), "stories260K.qsf")
	if _, err := convert.FromGGUF(gguf, path, convert.Options{}); err != nil {
		t.Fatal(err)
	}
	cfg := smallestBudget(t, path, qsf.Config{ContextLength: 64, KVType: "f32", Threads: 1})
	ids := []int{1, 403, 407, 261}
	want := sessionLogits(t, gguf, qsf.Config{ContextLength: 64, Threads: 1}, ids)
	got := sessionLogits(t, path, cfg, ids)
	for i := range want {
		for j := range want[i] {
			if got[i][j] != want[i][j] {
				t.Fatalf("token %d logit %d: QSF streaming %v, GGUF resident %v", i, j, got[i][j], want[i][j])
			}
		}
	}

	f, err := format.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	q := f.QSF()
	entry := q.Layers[1]
	var matrix, vector int64 = -1, -1
	for _, ts := range q.LayerTensors[1] {
		at := int64(entry.Offset) + int64(ts.DataOffset) + int64(ts.Size)/2
		if ts.Rows() > 1 {
			matrix = at
		} else {
			vector = at
		}
	}
	f.Close()
	if entry.Compression != format.CompressNone || matrix < 0 || vector < 0 {
		t.Fatalf("layer 1: compression %v, a matrix at %d, a vector at %d", entry.Compression, matrix, vector)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		off  int64
	}{{"matrix", matrix}, {"vector", vector}} {
		t.Run(tc.name, func(t *testing.T) {
			bad := slices.Clone(data)
			bad[tc.off] ^= 0x10
			p := filepath.Join(t.TempDir(), "bad.qsf")
			if err := os.WriteFile(p, bad, 0o644); err != nil {
				t.Fatal(err)
			}
			for _, copied := range []bool{false, true} {
				st, _ := streamingState(t, p, func(*stream.Layout) stream.Options {
					return stream.Options{RingBytes: 1, EmbedRows: 4, VerifyCRC: true, Copy: copied}
				})
				var err error
				for pos := 0; pos < 2 && err == nil; pos++ {
					err = st.Forward(ids[pos], pos, true)
				}
				if !errors.Is(err, format.ErrChecksum) {
					t.Fatalf("copied %v: Forward over a flipped %s byte: %v, want format.ErrChecksum", copied, tc.name, err)
				}
			}
		})
	}
}
