package kernels

import (
	"errors"
	"fmt"
	"maps"
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

// q4_0Gemv is the table key of Q4_0 matrices of a multiple of 8 rows,
// which llama.cpp repacks at load and multiplies in the order of
// ggml_gemv_q4_0_8x8_q8_0 (quant.DotQ4_0Gemv; check returns q4_0Repacked
// for them). It is a key, not a type: the matrices are Q4_0 in the file's
// layout, with Q4_0's activations, and a table row under it prepares them
// as its Q4_0 row does.
const q4_0Gemv = quant.Type(2<<16 | uint32(quant.Q4_0))

// kernelKey returns the table key of the matrices check gives traits tt:
// their type, or q4_0Gemv.
func kernelKey(tt *quant.Traits) quant.Type {
	if tt == q4_0Repacked {
		return q4_0Gemv
	}
	return tt.Type
}

// typeKernels is one row of a tier's table: the tier's kernels for the
// matrices of one key (a weight type, the repacked Q4_0x8 and Q8_0x4
// included, or q4_0Gemv).
type typeKernels struct {
	// rows is the decode kernel: out[r] = dot(row r, act). nil means
	// the generic kernel, package quant's Dot row by row.
	rows rowsFunc
	// prep derives what rows needs of an activation, once per
	// activation; nil when it needs nothing.
	prep prepFunc
	// tile is the prefill kernel: tiles of rows against several
	// activations at once. nil means one activation at a time (rows).
	tile *tileKernel
	// rowsTier and tileTier name the tiers whose code rows and tile are:
	// another tier's where the table inherited them.
	rowsTier, tileTier string
}

// kernelRow is one entry of the literal tables the tiers are registered
// from (see Tier.register).
type kernelRow struct {
	key  quant.Type
	rows rowsFunc
	prep prepFunc
	tile *tileKernel
}

// Tier is one set of kernels for one instruction set ("generic", "avx2",
// "avx512", "neon", "neon-dotprod").
// Every tier computes the generic tier's results bit for bit; they differ
// in speed only. A Tier is immutable and safe for concurrent use. Its
// methods (Quantize, SiluF32, DotF32Rows, ...) are the package functions of
// the same names run on that tier; a Pool runs its matrix kernels on the
// tier it was made with.
type Tier struct {
	name string

	// table holds the tier's matrix kernels by key (kernelKey). A key
	// it lacks runs the generic kernel.
	table map[quant.Type]typeKernels

	// quantQ8_0, quantQ8_1 and quantQ8_K quantize an activation to
	// Q8_0, Q8_1 and Q8_K (see Quantize); nil means package quant's.
	quantQ8_0, quantQ8_1, quantQ8_K func(dst []byte, src []float32)
}

// inherit makes tr's kernels those of base, until tr registers its own.
func (tr *Tier) inherit(base *Tier) {
	tr.table = maps.Clone(base.table)
	tr.quantQ8_0, tr.quantQ8_1, tr.quantQ8_K = base.quantQ8_0, base.quantQ8_1, base.quantQ8_K
}

// register sets the rows of tr's table listed: each row's decode kernel
// and its preparation when rows is not nil, its tile kernel when tile is
// not nil, keeping what the table had (inherited) for the rest.
func (tr *Tier) register(rows []kernelRow) {
	if tr.table == nil {
		tr.table = make(map[quant.Type]typeKernels)
	}
	for _, r := range rows {
		k := tr.table[r.key]
		if r.rows != nil {
			k.rows, k.prep, k.rowsTier = r.rows, r.prep, tr.name
		}
		if r.tile != nil {
			k.tile, k.tileTier = r.tile, tr.name
		}
		tr.table[r.key] = k
	}
}

// prepFor returns the tier's activation preparation for the matrices of
// key k, or nil when its kernel needs none.
func (tr *Tier) prepFor(k quant.Type) prepFunc { return tr.row(k).prep }

// row returns the table row of key k: the tier's own or inherited one, or
// the generic tier's when the tier has none (a tier made without
// inheriting, as a new architecture's starts out).
func (tr *Tier) row(k quant.Type) typeKernels {
	if r, ok := tr.table[k]; ok {
		return r
	}
	return genericTier.table[k]
}

// prepare returns the auxiliary activation data the tier's kernel for
// key k needs, built in buf, or buf itself when it needs none.
func (tr *Tier) prepare(k quant.Type, buf, act []byte, cols int) []byte {
	if f := tr.prepFor(k); f != nil && cols > 0 {
		return f(buf, act, cols)
	}
	return buf
}

// run computes the rows of out with the tier's kernel for the matrices
// check gave traits tt, or with the generic one when the tier has none.
// aux is the result of prepare.
func (tr *Tier) run(tt *quant.Traits, out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	if cols == 0 {
		clear(out)
		return
	}
	if f := tr.row(kernelKey(tt)).rows; f != nil {
		f(out, w, rowBytes, cols, act, aux)
		return
	}
	genericRows(tt.Dot, out, w, rowBytes, cols, act)
}

// tileFor returns the tile kernel of tier tr for the matrices check gave
// traits tt, or nil when it has none.
func tileFor(tr *Tier, tt *quant.Traits) *tileKernel { return tr.row(kernelKey(tt)).tile }

// KernelTiers returns the names of the tiers whose code tr runs for
// matrices of type t (Q4_0x8 and Q8_0x4 included) and n rows: rows for
// one activation at a time (decode), tile for several (prefill; "" when
// they go one at a time through rows). A tier runs another's kernels
// where it has no faster ones of its own; "generic" is package quant's
// code.
func (tr *Tier) KernelTiers(t quant.Type, n int) (rows, tile string) {
	key := t
	if t == quant.Q4_0 && n%8 == 0 {
		key = q4_0Gemv // as check picks q4_0Repacked
	}
	k := tr.row(key)
	rows = k.rowsTier
	if k.rows == nil {
		rows = genericTier.name
	}
	return rows, k.tileTier
}

var (
	genericTier = newGenericTier()

	// available lists the tiers this CPU and build can run, slowest
	// first. Architecture-specific files append to it in their init.
	available = []*Tier{genericTier}

	current atomic.Pointer[Tier]
)

func init() {
	genericTier.register([]kernelRow{
		{key: Q4_0x8, rows: q4_0x8SWAR, prep: prepQ4_0x8SWAR},
		{key: Q4_0x16, rows: q4_0x16SWAR, prep: prepQ4_0x8SWAR},
		{key: Q8_0x4, rows: q8_0x4GenericRows},
		{key: Q6_KS, rows: q6_KSRows, prep: prepQ6_KS},
		{key: QSF_Q2Rx8, rows: rotX8Generic(QSF_Q2Rx8)},
		{key: QSF_Q3Rx8, rows: rotX8Generic(QSF_Q3Rx8)},
		{key: QSF_Q4Rx8, rows: rotX8Generic(QSF_Q4Rx8)},
		{key: F32H, rows: f32hGeneric},
	})
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
