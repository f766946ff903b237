package kernels

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"github.com/qsf-llm/qsf/quant"
)

// ErrTier is returned by SetTier for a tier name that does not exist or is
// not supported by this CPU or build.
var ErrTier = errors.New("kernels: tier not available")

// rowsFunc computes out[r] = dot(row r, act) for every r in out, where row r
// starts at w[r*rowBytes]. aux is what the tier's prepFunc for the type made
// of act, if it has one. The caller has validated every length.
type rowsFunc func(out []float32, w []byte, rowBytes, cols int, act, aux []byte)

// prepFunc derives, once per matrix, activation data that every row's kernel
// would otherwise recompute (converted scales, bias sums). It writes into
// buf, grown when too small, and returns the result.
type prepFunc func(buf, act []byte, cols int) []byte

// maxType bounds the quant.Type ids a tier table can hold.
const maxType = 32

// tier is one set of kernels. A nil entry falls back to the generic tier.
type tier struct {
	name string
	// experimental tiers are never chosen by default, only by name.
	experimental bool

	kernels [maxType]rowsFunc
	preps   [maxType]prepFunc

	// packed and packedPrep are the kernel for a packed Q4_0 matrix and
	// its activation preparation; nil means the portable one.
	packed     rowsFunc
	packedPrep prepFunc

	// q4_0Gemv is the kernel for Q4_0 matrices that llama.cpp repacks
	// (check returns q4_0Repacked for them), in the order of
	// ggml_gemv_q4_0_8x8_q8_0; it takes the activation prepared for
	// Q4_0. nil means the generic kernel, which follows that order too.
	q4_0Gemv rowsFunc
}

// prepare returns the auxiliary activation data the tier's kernel for t
// needs, built in buf, or buf itself when it needs none.
func (tr *tier) prepare(t quant.Type, buf, act []byte, cols int) []byte {
	if int(t) < maxType && cols > 0 {
		if f := tr.preps[t]; f != nil {
			return f(buf, act, cols)
		}
	}
	return buf
}

// run computes the rows of out with the tier's kernel for the type of tt,
// or with the generic one when the tier has none. aux is the result of
// prepare.
func (tr *tier) run(tt *quant.Traits, out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	if cols == 0 {
		clear(out)
		return
	}
	if tt == q4_0Repacked {
		if tr.q4_0Gemv != nil {
			tr.q4_0Gemv(out, w, rowBytes, cols, act, aux)
		} else {
			genericRows(tt.Dot, out, w, rowBytes, cols, act)
		}
		return
	}
	if t := tt.Type; int(t) < maxType {
		if f := tr.kernels[t]; f != nil {
			f(out, w, rowBytes, cols, act, aux)
			return
		}
	}
	genericRows(tt.Dot, out, w, rowBytes, cols, act)
}

var (
	genericTier = &tier{name: "generic"}

	// available lists the tiers this CPU and build can run, slowest
	// first. Architecture-specific files append to it in their init.
	available = []*tier{genericTier}

	current atomic.Pointer[tier]
)

func init() {
	registerArch()
	best := genericTier
	for _, t := range available {
		if !t.experimental {
			best = t
		}
	}
	current.Store(best)
	if name := os.Getenv("QSF_KERNEL"); name != "" {
		if err := SetTier(name); err != nil {
			fmt.Fprintf(os.Stderr, "kernels: QSF_KERNEL=%s: %v; using %s\n", name, err, best.name)
		}
	}
}

// Tier returns the name of the tier MatVec currently uses.
func Tier() string { return current.Load().name }

// Tiers returns the names of the tiers available on this CPU and build,
// slowest first. "generic" is always among them. The default tier is the
// fastest one that is not experimental; "avx512" is experimental (see the
// package documentation).
func Tiers() []string {
	names := make([]string, len(available))
	for i, t := range available {
		names[i] = t.name
	}
	return names
}

// SetTier makes MatVec and every Pool use the named tier. It returns an
// error wrapping ErrTier, and leaves the tier unchanged, when the name is
// unknown or the tier cannot run on this CPU or build.
func SetTier(name string) error {
	for _, t := range available {
		if t.name == name {
			current.Store(t)
			return nil
		}
	}
	switch name {
	case "generic", "avx2", "avx512":
		return fmt.Errorf("%w: %q is not supported on this CPU or build", ErrTier, name)
	}
	return fmt.Errorf("%w: unknown tier %q", ErrTier, name)
}
