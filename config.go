package qsf

import (
	"cmp"
	"fmt"
	"log/slog"
	"runtime"

	"github.com/qsf-llm/qsf/internal/load"
)

// Config controls how a model is loaded and run. The zero value is a good
// default: every physical core, the fastest kernels this CPU has, the
// model's own context length (capped at DefaultContextLength), weights
// memory-mapped.
type Config struct {
	// Threads is the number of threads a session computes with. 0 means
	// one per physical core.
	Threads int

	// ContextLength is the number of positions a session can hold (its
	// KV cache size). 0 means the model's trained context length, capped
	// at DefaultContextLength.
	ContextLength int

	// Kernel picks the model's kernel tier: "generic", "avx2", "avx512", "neon" or
	// "neon-dotprod" (see
	// kernels.Tiers). Empty means the QSF_KERNEL environment variable
	// when it is set, else the fastest tier this CPU supports. The tier
	// belongs to the model: other models and the process default
	// (kernels.DefaultTier) are not affected.
	Kernel string

	// NoMmap reads the weights into memory instead of mapping the file.
	NoMmap bool

	// NoRepack keeps Q4_0, Q8_0, (on CPUs with AVX-512 VBMI) QSF's
	// rotated and (on the generic kernel tier) Q6_K matrices in the file's
	// layout, multiplied in place from the mapping. By default a resident
	// model repacks them at load, as llama.cpp does, into layouts its
	// kernels read faster (kernels.Q4_0x8 or Q4_0x16, kernels.Q8_0x4,
	// kernels.QSF_Q4Rx8, kernels.Q6_KS, ...; see
	// kernels.RepackType):
	// a pass over those weights at load, and their memory moves from the
	// page cache, which processes mapping the same file share, into the
	// process's own. Results are the same bit for bit. Without a
	// RAMBudget, the mapped matrices the tier does not repack go there
	// too, as a decode step reads them whole: F32 ones on the avx512 tier
	// packed losslessly in 28 bits a weight (kernels.F32H: less to read,
	// the same bits), the others (on Linux) copied as they are, and on Linux the repacked weights are advised
	// for transparent huge pages (fewer TLB misses); NoRepack leaves those
	// mapped as well. A streaming model
	// (RAMBudget too small to hold the weights) never repacks, nor do QSF
	// records read into memory (LZ4-compressed, or with NoMmap).
	NoRepack bool

	// RAMBudget is the most memory (bytes of peak resident set) the model
	// and Sessions sessions may use. 0 means no budget: the weights are
	// memory-mapped (resident mode). With a budget, Load plans the memory
	// from the file's metadata first (see package plan): when everything
	// fits the model stays resident, otherwise its layers are streamed
	// from the file; when the budget is short, Load shortens the context
	// (unless ContextLength is set), lowers the KV cache precision (unless
	// KVType is set), shrinks the embedding row cache and gives up the
	// prefetch buffer, and fails with ErrBudget stating the smallest
	// budget that works when even that does not fit. A mixture of experts
	// keeps all but its routed experts resident instead and reads the
	// experts each token selects into an expert cache as large as the
	// budget allows (see Session.ExpertStats). ContextLength is the
	// maximum sequence length (MaxSeqLen) the plan holds.
	RAMBudget int64

	// Sessions is how many sessions RAMBudget holds at once (each its KV
	// cache and activations; a layer-streaming model's sessions share its
	// layer reader); 0 means one. Opening more sessions than that may
	// exceed the budget.
	Sessions int

	// KVType is the KV cache storage: "f32" (exact, the default), "f16",
	// "q8", "q4" or "q2" (per-position, per-head scales). Empty means
	// f32, or less under a tight RAMBudget.
	KVType string

	// KVEviction lets a session run past ContextLength positions: "window"
	// keeps the most recent ones (a sliding window), "h2o" keeps the most
	// attended ones plus a recent window of KVRecent positions (default
	// half the context). Empty (or "none") means a full context is an
	// error.
	KVEviction string
	KVRecent   int

	// Quality (0..1, 0 meaning 1) is the output quality a caller accepts
	// in exchange for speed; it is reserved for layer skipping and
	// currently has no effect.
	Quality float64

	// NoPrefetch makes a streaming session use the smallest ring buffer
	// the layers fit in (its largest matrix group), so the reader is at
	// most about one matrix ahead of the forward pass, instead of the
	// largest ring the budget allows (up to two layers, read ahead while
	// the current one computes).
	NoPrefetch bool

	// DropPageCache makes a streaming session tell the kernel, after each
	// read, that the file's pages are not needed (posix_fadvise
	// DONTNEED), so they are not kept in the page cache on its account.
	DropPageCache bool

	// ChatTemplate overrides the model's chat template (its
	// tokenizer.chat_template) for ApplyTemplate and Session.Chat: the
	// name of a built-in format ("chatml", "llama3", ...; see
	// chat.Formats) or a template text to recognise. Empty means the
	// model's own.
	ChatTemplate string

	// Logger receives a warning whenever Load changes what the config
	// asks for or accepts a risky value: Threads above the CPUs (clamped),
	// a ContextLength above the model's trained context or cut to its
	// position table, a context or KV cache type lowered to fit
	// RAMBudget. nil means no logging; the library never prints.
	Logger *slog.Logger

	// LoadProgress, when not nil, is called by Load as it prepares the
	// weights (repacking them, the slow part of loading a large Q4_0 or
	// Q8_0 model), with the bytes done so far out of a fixed total. It is
	// not called when there is nothing to prepare.
	LoadProgress func(done, total int64)
}

// logger returns the configured logger, or one that discards.
func (cfg *Config) logger() *slog.Logger {
	if cfg.Logger != nil {
		return cfg.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// clampThreads lowers Threads to the number of CPUs, with a warning:
// more threads than CPUs only wait for each other.
func (cfg *Config) clampThreads() {
	if n := runtime.NumCPU(); cfg.Threads > n {
		cfg.logger().Warn(fmt.Sprintf("%d threads asked, %d CPUs: using %d", cfg.Threads, n, n))
		cfg.Threads = n
	}
}

// DefaultContextLength caps the context of a session when
// Config.ContextLength is 0.
const DefaultContextLength = 4096

// threads is the number of threads sessions compute with.
func (cfg *Config) threads() int { return cmp.Or(max(cfg.Threads, 0), defaultThreads()) }

// loadOptions are the settings loading reads, resolved.
func (cfg *Config) loadOptions() load.Options {
	return load.Options{
		Threads: cfg.threads(), ContextLength: cfg.ContextLength, DefaultContext: DefaultContextLength, NoMmap: cfg.NoMmap, NoRepack: cfg.NoRepack,
		RAMBudget: cfg.RAMBudget, KVType: cfg.KVType, KVEviction: cfg.KVEviction, KVRecent: cfg.KVRecent,
		NoPrefetch: cfg.NoPrefetch, Sessions: cfg.Sessions, Logger: cfg.logger(), Progress: cfg.LoadProgress,
	}
}
