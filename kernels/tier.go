package kernels

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/qsf-llm/qsf/quant"
)

// ErrTier is returned by TierNamed and SetTier for a tier name that does not
// exist or is not supported by this CPU or build.
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
const maxType = 40

// Tier is one set of kernels for one instruction set ("generic", "avx2",
// "avx512", "neon", "neon-dotprod").
// Every tier computes the generic tier's results bit for bit; they differ
// in speed only. A Tier is immutable and safe for concurrent use. Its
// methods (Quantize, SiluF32, DotF32Rows, ...) are the package functions of
// the same names run on that tier; a Pool runs its matrix kernels on the
// tier it was made with.
type Tier struct {
	name string

	kernels [maxType]rowsFunc
	preps   [maxType]prepFunc

	// q4_0Gemv is the kernel for Q4_0 matrices that llama.cpp repacks
	// (check returns q4_0Repacked for them), in the order of
	// ggml_gemv_q4_0_8x8_q8_0; it takes the activation prepared for
	// Q4_0. nil means the generic kernel, which follows that order too.
	q4_0Gemv rowsFunc

	// q4_0x8 and q4_0x8Prep are the kernel for Q4_0x8 matrices and its
	// activation preparation, q8_0x4 and q8_0x4Prep those for Q8_0x4. nil
	// means q4_0x8Generic or q8_0x4Generic, which need none.
	q4_0x8, q8_0x4         rowsFunc
	q4_0x8Prep, q8_0x4Prep prepFunc

	// quantQ8_0, quantQ8_1 and quantQ8_K quantize an activation to
	// Q8_0, Q8_1 and Q8_K (see Quantize); nil means package quant's.
	quantQ8_0, quantQ8_1, quantQ8_K func(dst []byte, src []float32)
}

// prepFor returns the tier's activation preparation for weights of type
// t, or nil when its kernel needs none.
func (tr *Tier) prepFor(t quant.Type) prepFunc {
	switch t {
	case Q4_0x8:
		return tr.q4_0x8Prep
	case Q8_0x4:
		return tr.q8_0x4Prep
	}
	if int(t) < maxType {
		return tr.preps[t]
	}
	return nil
}

// prepare returns the auxiliary activation data the tier's kernel for t
// needs, built in buf, or buf itself when it needs none.
func (tr *Tier) prepare(t quant.Type, buf, act []byte, cols int) []byte {
	if f := tr.prepFor(t); f != nil && cols > 0 {
		return f(buf, act, cols)
	}
	return buf
}

// run computes the rows of out with the tier's kernel for the type of tt,
// or with the generic one when the tier has none. aux is the result of
// prepare.
func (tr *Tier) run(tt *quant.Traits, out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	if cols == 0 {
		clear(out)
		return
	}
	switch tt {
	case q4_0x8Traits:
		if tr.q4_0x8 != nil {
			tr.q4_0x8(out, w, rowBytes, cols, act, aux)
		} else {
			q4_0x8Generic(out, w, rowBytes, cols, act)
		}
		return
	case q8_0x4Traits:
		if tr.q8_0x4 != nil {
			tr.q8_0x4(out, w, rowBytes, cols, act, aux)
		} else {
			q8_0x4Generic(out, w, rowBytes, cols, act)
		}
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
	genericTier = &Tier{name: "generic"}

	// available lists the tiers this CPU and build can run, slowest
	// first. Architecture-specific files append to it in their init.
	available = []*Tier{genericTier}

	current atomic.Pointer[Tier]
)

func init() {
	registerArch()
	current.Store(BestTier())
}

// Name returns the tier's name, as Tiers lists it.
func (tr *Tier) Name() string { return tr.name }

// BestTier returns the fastest tier this CPU and build can run.
func BestTier() *Tier { return available[len(available)-1] }

// DefaultTier returns the tier of the package-level functions (MatVec,
// MatMul, Quantize, the vector functions) and of pools made by NewPool:
// BestTier, unless the program chose another with SetTier.
func DefaultTier() *Tier { return current.Load() }

// Tiers returns the names of the tiers available on this CPU and build,
// slowest first. "generic" is always among them. Only complete tiers are
// listed, and each gives the generic tier's results bit for bit.
func Tiers() []string {
	names := make([]string, len(available))
	for i, t := range available {
		names[i] = t.name
	}
	return names
}

// TierNamed returns the named tier; "" names BestTier. It returns an error
// wrapping ErrTier when the name is unknown or the tier cannot run on this
// CPU or build.
func TierNamed(name string) (*Tier, error) {
	if name == "" {
		return BestTier(), nil
	}
	for _, t := range available {
		if t.name == name {
			return t, nil
		}
	}
	switch name {
	case "generic", "avx2", "avx512", "neon", "neon-dotprod":
		return nil, fmt.Errorf("%w: %q is not supported on this CPU or build", ErrTier, name)
	}
	return nil, fmt.Errorf("%w: unknown tier %q", ErrTier, name)
}

// SetTier changes DefaultTier for the whole process; "" restores
// BestTier. It is meant for programs and tests: a library should pick a
// tier with TierNamed and run it through NewPoolTier and the Tier methods
// instead, leaving the process default alone. On error (wrapping ErrTier)
// the default is unchanged.
func SetTier(name string) error {
	t, err := TierNamed(name)
	if err != nil {
		return err
	}
	current.Store(t)
	return nil
}
