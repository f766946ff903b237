package load

import (
	"log/slog"
	"testing"

	"github.com/qsf-llm/qsf/internal/testfiles"
	"github.com/qsf-llm/qsf/plan"
)

// TestOpenModes loads one file without a budget, with a budget it fits
// (resident: the file opened to plan is then mapped, unless NoMmap) and
// with one that makes it stream (the file stays unmapped, read with
// pread), and checks what each result holds.
func TestOpenModes(t *testing.T) {
	path := testfiles.Path(t, "models", "gguf", "stories260K-f32.gguf")
	base := Options{Threads: 1, ContextLength: 64, DefaultContext: 4096, Logger: slog.New(slog.DiscardHandler)}
	for _, tc := range []struct {
		name     string
		budget   int64
		noMmap   bool
		mode     string
		mapped   bool
		streamed bool
	}{
		{"no budget", 0, false, plan.Resident, true, false},
		{"no budget, NoMmap", 0, true, plan.Resident, false, false},
		{"budget, resident", 1 << 30, false, plan.Resident, true, false},
		{"budget, resident, NoMmap", 1 << 30, true, plan.Resident, false, false},
		{"budget, streaming", 13_300_000, false, plan.Streaming, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := base
			o.RAMBudget, o.NoMmap = tc.budget, tc.noMmap
			m, err := Open(path, o)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if m.Plan == nil || m.Plan.Mode != tc.mode {
				t.Fatalf("plan %+v, want mode %v", m.Plan, tc.mode)
			}
			if m.File.Mapped() != tc.mapped {
				t.Errorf("file mapped %v, want %v", m.File.Mapped(), tc.mapped)
			}
			if (m.Layout != nil) != tc.streamed || m.Experts != nil {
				t.Errorf("layout %v, experts %v", m.Layout != nil, m.Experts != nil)
			}
			if m.Ctx != 64 || m.Plan.Ctx != 64 {
				t.Errorf("context %d, plan's %d, want 64", m.Ctx, m.Plan.Ctx)
			}
			if !tc.streamed {
				// The token embedding: without a budget the F32
				// matrices move to the huge-page arena on Linux
				// (TestF32HugeCopy).
				w := m.Net.TokenEmbd.Data
				if got := m.File.IsMapped(w); got != tc.mapped {
					t.Errorf("a weight lies in the mapping: %v, want %v", got, tc.mapped)
				}
			}
		})
	}
}
