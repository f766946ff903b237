package qsf

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

	// Kernel forces a kernel tier: "generic", "avx2" or "avx512". Empty
	// means the best this CPU supports (or the QSF_KERNEL environment
	// variable when set).
	Kernel string

	// NoMmap reads the weights into memory instead of mapping the file.
	NoMmap bool
}

// DefaultContextLength caps the context of a session when
// Config.ContextLength is 0.
const DefaultContextLength = 4096
