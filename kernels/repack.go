package kernels

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/qsf-llm/qsf/quant"
)

// Q4_0x8 is the element type of a Q4_0 matrix that Repack has
// rearranged at load time for the Q4_0 kernels. It is never stored in a
// file: its value lies outside ggml's type ids. MatVec, Pool.MatVec,
// Pool.MatVecs, MatMul and Pool.MatMul accept it like any other type, with
// Q8_0 activations, for matrices of a multiple of 8 rows, and give the
// same results, bit for bit, as for the Q4_0 matrix it was packed from
// (llama.cpp's repacked gemv order, quant.DotQ4_0Gemv).
//
// The layout keeps the matrix's size (18 bytes per 32 weights) and its
// groups of 8 rows in order, so rows [8i, 8j) are bytes
// [8i·rowBytes, 8j·rowBytes) as before. Within a group, block b (columns
// 32b..32b+31 of the eight rows) is 144 bytes at 144·b: the eight rows'
// fp16 scales, then four 32-byte chunks, chunk c holding bytes 4c..4c+3 of
// each row's 16 bytes of nibbles in row order. One load then holds a
// quarter of the block for all eight rows, lane r of a dot product's int32
// sums is row r, and the scales convert with one instruction: the file's
// layout, with each row's scales between its nibbles, needs eight scalar
// loads and two horizontal adds per block.
const Q4_0x8 = quant.Type(1<<16 | uint32(quant.Q4_0))

// q4_0x8Block is the size of one block of a group of 8 rows.
const q4_0x8Block = 8 * 18

// Q4_0x16 is the element type of a Q4_0 matrix that RepackTo has
// rearranged at load time for the avx512 tier's Q4_0 kernels: like Q4_0x8
// (never stored in a file, accepted by the MatVec and MatMul functions
// with Q8_0 activations, the Q4_0 matrix's results bit for bit), for
// matrices of a multiple of 16 rows. RepackType names it only for a tier
// with kernels for it; Repack never picks it.
//
// The layout keeps the matrix's size and its groups of 16 rows in order;
// a group is two Q4_0x8 groups (rows 0..7 and 8..15) interleaved block by
// block: block b is 288 bytes at 288·b, the first group's 8 fp16 scales,
// then the second's, then four 64-byte chunks, chunk c being the first
// group's 32-byte chunk c of the block (Q4_0x8's) followed by the
// second's. A 512-bit kernel then loads a quarter of the block for all
// 16 rows with one plain load (lane r of its int32 sums row r) and
// converts the 16 scales with one instruction, reading one stream of
// memory; on Q4_0x8 the two groups of a zmm are two streams nb·144 bytes
// apart, merged by five masked broadcasts a block.
const Q4_0x16 = quant.Type(3<<16 | uint32(quant.Q4_0))

// q4_0x16Block is the size of one block of a group of 16 rows.
const q4_0x16Block = 16 * 18

// f16le decodes the fp16 at b.
func f16le(b []byte) float32 { return quant.FP16ToFP32(binary.LittleEndian.Uint16(b)) }

// q4_0x8Traits is the traits row check returns for Q4_0x8. Its Dot is
// nil: a row of the layout is not contiguous, so tier.run sends these
// matrices to q4_0x8SWAR or the tier's kernel.
var q4_0x8Traits = repackedTraits(quant.Q4_0, Q4_0x8)

// repackKind is one row of the table of repacked types.
type repackKind struct {
	file   quant.Type    // the file type it is packed from
	group  int           // rows per group; matrices are whole groups
	cols   int           // columns per block (the file type's block size)
	traits *quant.Traits // what Lookup and check return for it
	// native says whether the layout pays off on a tier: false leaves a
	// matrix in the file's layout (nil: always repack).
	native func(*Tier) bool
	// packBlock writes block b of the group grp (group rows of rb bytes
	// each, in the file's layout) to o.
	packBlock func(o, grp []byte, rb, b int)
	// explicit says Repack never picks the layout: only RepackType (on
	// a tier where it is native) names it and RepackTo makes it.
	explicit bool
}

// repacked lists the repacked types.
var repacked = map[quant.Type]*repackKind{
	Q4_0x16:   {file: quant.Q4_0, group: 16, cols: 32, traits: repackedTraits(quant.Q4_0, Q4_0x16), packBlock: packQ4_0x16Block, native: q4_0x16Native, explicit: true},
	Q4_0x8:    {file: quant.Q4_0, group: 8, cols: 32, traits: q4_0x8Traits, packBlock: packQ4_0x8Block},
	Q8_0x4:    {file: quant.Q8_0, group: 4, cols: 32, traits: q8_0x4Traits, packBlock: packQ8_0x4Block},
	QSF_Q2Rx8: {file: quant.QSF_Q2R, group: 8, cols: 64, traits: repackedTraits(quant.QSF_Q2R, QSF_Q2Rx8), packBlock: packRotX8Block(2), native: rotX8Native(QSF_Q2Rx8)},
	QSF_Q3Rx8: {file: quant.QSF_Q3R, group: 8, cols: 64, traits: repackedTraits(quant.QSF_Q3R, QSF_Q3Rx8), packBlock: packRotX8Block(3), native: rotX8Native(QSF_Q3Rx8)},
	QSF_Q4Rx8: {file: quant.QSF_Q4R, group: 8, cols: 64, traits: repackedTraits(quant.QSF_Q4R, QSF_Q4Rx8), packBlock: packRotX8Block(4), native: rotX8Native(QSF_Q4Rx8)},
	Q6_KS:     {file: quant.Q6_K, group: 1, cols: 256, traits: repackedTraits(quant.Q6_K, Q6_KS), packBlock: packQ6_KSBlock, native: q6_KSNative},
}

// repackOrder lists the repacked types in the order RepackType and Repack
// try them (the table is a map): Q4_0x16 before Q4_0x8, so that a Q4_0
// matrix of a multiple of 16 rows gets the former where it is native.
var repackOrder = []quant.Type{Q4_0x16, Q4_0x8, Q8_0x4, QSF_Q2Rx8, QSF_Q3Rx8, QSF_Q4Rx8, Q6_KS}

// q4_0x16Native reports whether tier tr has a decode kernel of its own
// for Q4_0x16 (the avx512 tier): the other tiers would run the generic
// one, slower than their Q4_0x8 kernels.
func q4_0x16Native(tr *Tier) bool {
	k, ok := tr.table[Q4_0x16]
	return ok && k.rows != nil && k.rowsTier != genericTier.name
}

// rotX8Native reports whether a tier has a kernel of its own for the x8
// layout t of a rotated type: only then does the layout pay off (the other
// tiers' kernels read the file's layout faster than the generic kernel
// reads the x8 one).
func rotX8Native(t quant.Type) func(*Tier) bool {
	return func(tr *Tier) bool {
		k, ok := tr.table[t]
		return ok && k.rows != nil && k.rowsTier != genericTier.name
	}
}

// repackedTraits is the traits row of a repacked type t: that of its file
// type, with no functions, since its rows are not contiguous.
func repackedTraits(file, t quant.Type) *quant.Traits {
	tr, err := quant.Lookup(file)
	if err != nil {
		panic(err)
	}
	c := *tr
	c.Type = t
	c.Dot, c.Dequantize, c.Quantize, c.QuantizeRef = nil, nil, nil, nil
	return &c
}

// repackOf returns the table row of repacked type t, or nil when t is a
// file type.
func repackOf(t quant.Type) *repackKind {
	if t < 1<<16 {
		return nil
	}
	return repacked[t]
}

// Lookup returns the traits of t as the kernels see them: quant.Lookup's
// for file types, and for a repacked type (Q4_0x8, Q8_0x4) the row of its
// file type with Type set to it and no functions (its rows are
// interleaved in groups, so no row can be decoded or multiplied alone);
// for F32H, F32's row with no functions.
func Lookup(t quant.Type) (*quant.Traits, error) {
	if t == F32H {
		return f32hTraits, nil
	}
	if k := repackOf(t); k != nil {
		return k.traits, nil
	}
	return quant.Lookup(t)
}

// rowBytes is quant.RowBytes extended to the repacked types (which keep
// their file type's size).
func rowBytes(t quant.Type, cols int) (int, error) {
	if t == F32H {
		if rb, ok := F32HRowBytes(cols); ok {
			return rb, nil
		}
		return 0, fmt.Errorf("%w: F32H needs a multiple of 32 columns, not %d", ErrRepack, cols)
	}
	if k := repackOf(t); k != nil {
		t = k.file
	}
	return quant.RowBytes(t, cols)
}

// ErrRepack is returned by Repack for a matrix it cannot repack.
var ErrRepack = errors.New("kernels: cannot repack matrix")

// RepackType returns the type RepackTo turns a rows×cols matrix of type
// t into, and false when the kernels have no faster layout for it: for Q4_0
// of a multiple of 16 rows Q4_0x16 where DefaultTier has kernels for it
// (avx512), else for a multiple of 8 rows Q4_0x8; Q8_0x4 for Q8_0 of a
// multiple of 4 rows, cols a positive multiple of 32; QSF_Q2Rx8,
// QSF_Q3Rx8 and QSF_Q4Rx8 for QSF_Q2R, QSF_Q3R and QSF_Q4R of a multiple
// of 8 rows when DefaultTier has a kernel for them (the avx512 tier with
// VBMI); Q6_KS for Q6_K (cols a multiple of 256) when DefaultTier's Q6_K
// kernel is the generic tier's. It is DefaultTier().RepackType.
func RepackType(t quant.Type, rows, cols int) (quant.Type, bool) {
	return DefaultTier().RepackType(t, rows, cols)
}

// RepackType is the package's RepackType for a model that runs on tier tr:
// Q4_0x16 and the rotated types' x8 layouts only where tr has kernels of
// its own for them, Q6_KS only where tr runs the generic Q6_K kernel.
func (tr *Tier) RepackType(t quant.Type, rows, cols int) (quant.Type, bool) {
	for _, pt := range repackOrder {
		k := repacked[pt]
		if k.fits(t, rows, cols) && (k.native == nil || k.native(tr)) {
			return pt, true
		}
	}
	return t, false
}

// fits reports whether k's layout can hold a rows×cols matrix of type t.
func (k *repackKind) fits(t quant.Type, rows, cols int) bool {
	return k.file == t && rows > 0 && rows%k.group == 0 && cols > 0 && cols%k.cols == 0
}

// repackLayout returns the repacked type Repack turns a rows×cols matrix
// of type t into (the first in repackOrder that can hold it, explicit
// ones aside), and false when none can.
func repackLayout(t quant.Type, rows, cols int) (quant.Type, bool) {
	for _, pt := range repackOrder {
		if k := repacked[pt]; !k.explicit && k.fits(t, rows, cols) {
			return pt, true
		}
	}
	return t, false
}

// Repack writes the repacked form of the rows×cols matrix src of type t
// (as stored in a GGUF file; RepackType's, where it has one and it is not
// Q4_0x16, and for the rotated types the x8 layout even where BestTier has
// no kernel for it) to dst, which must be as long as src, and returns the
// new type. dst may be src itself, to repack in place without a second
// copy of the matrix; otherwise the two must not overlap. It returns an
// error wrapping ErrRepack when t has no repacked layout for that shape or
// the lengths are wrong. RepackTo makes a layout of the caller's choice
// (RepackType's for the tier a model runs on).
func Repack(t quant.Type, dst, src []byte, rows, cols int) (quant.Type, error) {
	pt, ok := repackLayout(t, rows, cols)
	if !ok {
		return t, fmt.Errorf("%w: no repacked layout for %v %d×%d", ErrRepack, t, rows, cols)
	}
	if err := RepackTo(pt, dst, src, rows, cols); err != nil {
		return t, err
	}
	return pt, nil
}

// RepackTo writes the rows×cols matrix src, of the file type that
// repacked type pt is packed from (Q4_0 for Q4_0x8 and Q4_0x16, ...), in
// pt's layout to dst, as Repack does. It returns an error wrapping
// ErrRepack when pt is no repacked type, its layout cannot hold that shape
// or the lengths are wrong. Rows of whole groups of pt may be repacked a
// run at a time: the layout of a run of groups is the same bytes of the
// whole matrix's.
func RepackTo(pt quant.Type, dst, src []byte, rows, cols int) error {
	k := repackOf(pt)
	if k == nil {
		return fmt.Errorf("%w: %v is no repacked type", ErrRepack, pt)
	}
	t := k.file
	if !k.fits(t, rows, cols) {
		return fmt.Errorf("%w: no %v layout for %v %d×%d", ErrRepack, pt, t, rows, cols)
	}
	rb, err := quant.RowBytes(t, cols)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRepack, err)
	}
	if len(src) != rows*rb || len(dst) != len(src) {
		return fmt.Errorf("%w: %v %d×%d needs %d bytes, got %d and %d", ErrRepack, t, rows, cols, rows*rb, len(src), len(dst))
	}
	size := k.group * rb
	group := make([]byte, size) // one group of src, so dst may be src
	block := size / (cols / k.cols)
	for g := 0; g < rows/k.group; g++ {
		copy(group, src[g*size:(g+1)*size])
		out := dst[g*size : (g+1)*size]
		for b := 0; b < cols/k.cols; b++ {
			k.packBlock(out[b*block:(b+1)*block], group, rb, b)
		}
	}
	return nil
}

// packQ4_0x16Block writes block b of sixteen Q4_0 rows in the Q4_0x16
// layout: the Q4_0x8 blocks of rows 0..7 and 8..15, interleaved.
func packQ4_0x16Block(o, grp []byte, rb, b int) {
	var x8 [2][q4_0x8Block]byte
	for h := range x8 {
		packQ4_0x8Block(x8[h][:], grp[8*h*rb:], rb, b)
	}
	unpackQ4_0x16Block((*[q4_0x16Block]byte)(o), &x8[0], &x8[1], true)
}

// unpackQ4_0x16Block converts between a Q4_0x16 block x and the Q4_0x8
// blocks a and b of its two groups of 8 rows: x from a and b when pack,
// else a and b from x.
func unpackQ4_0x16Block(x *[q4_0x16Block]byte, a, b *[q4_0x8Block]byte, pack bool) {
	for h, g := range [2]*[q4_0x8Block]byte{a, b} {
		s, q := x[16*h:16*h+16], x[32:]
		if pack {
			copy(s, g[:16])
		} else {
			copy(g[:16], s)
		}
		for c := 0; c < 4; c++ {
			xc, gc := q[64*c+32*h:64*c+32*h+32], g[16+32*c:16+32*c+32]
			if pack {
				copy(xc, gc)
			} else {
				copy(gc, xc)
			}
		}
	}
}

// packQ4_0x8Block writes block b of eight Q4_0 rows in the Q4_0x8 layout.
func packQ4_0x8Block(o, grp []byte, rb, b int) {
	for r := 0; r < 8; r++ {
		blk := grp[r*rb+18*b : r*rb+18*b+18]
		copy(o[2*r:2*r+2], blk[:2])
		for c := 0; c < 4; c++ {
			copy(o[16+32*c+4*r:16+32*c+4*r+4], blk[2+4*c:6+4*c])
		}
	}
}

// fma32Try is quant.FMA32's fast path, small enough to inline: a·b+c and
// true when the float64 sum (the product is exact) rounds correctly to
// float32 (fma32Fits); false when the caller must call quant.FMA32.
func fma32Try(a, b, c float32) (float32, bool) {
	s := float64(float64(float64(a)*float64(b)) + float64(c))
	return float32(s), fma32Fits(math.Float64bits(s))
}

// fma32Rare is quant.FMA32 for the kernels' slow branches, where the
// float64 sum s = a·b+c (the product is exact) failed fma32Fits: when s is
// exact (TwoSum's error is zero, as on a first block, whose c is zero),
// converting it is the one rounding an fma makes, and only otherwise does
// it call quant.FMA32. Most of the midpoints the kernels meet are exact
// sums of few bits, which this returns in a few operations.
//
//go:noinline
func fma32Rare(a, b, c float32) float32 {
	p := float64(float64(a) * float64(b))
	s := float64(p + float64(c))
	bb := float64(s - p)
	if e := float64(float64(p-float64(s-bb)) + float64(float64(c)-bb)); e == 0 {
		return float32(s)
	}
	return quant.FMA32(a, b, c)
}

// fma32Fits reports whether the float64 s with bits b, the sum of an
// exact product and a float32, rounds correctly to float32: when it is
// no float32 rounding midpoint (its low 29 bits are not 1 followed by
// zeros) and zero or of float32-normal magnitude. The range test is one
// unsigned comparison: b<<1 − 1 wraps around to the top for zero. Kernels
// call it in an if statement's condition, where the compiler branches on
// it instead of making a bool.
func fma32Fits(b uint64) bool {
	return b<<35 != 1<<63 && b<<1-1 >= (1023-126)<<53-1
}

// q4_0x8TokBlock is the size of one Q8_0 block of one activation in the
// packed form of packQ4_0x8T4: the 32 quants, da as float32, 8·Σa as
// int32.
const q4_0x8TokBlock = 40

func packBytesQ4_0x8T4(cols int) int { return cols / 32 * tileTokens * q4_0x8TokBlock }

// packQ4_0x8T4 interleaves tileTokens Q8_0 activations block by block for
// the Q4_0x8 tile kernel: block b of activation t is at
// (b·tileTokens+t)·q4_0x8TokBlock.
func packQ4_0x8T4(dst, acts []byte, actBytes, cols int) {
	nb := cols / 32
	for t := 0; t < tileTokens; t++ {
		act := acts[t*actBytes : (t+1)*actBytes]
		for b := 0; b < nb; b++ {
			putQ4_0x8Tok(dst[(b*tileTokens+t)*q4_0x8TokBlock:][:q4_0x8TokBlock], act[34*b:34*b+34])
		}
	}
}

// prepQ4_0x8 builds the prepared activation of the Q4_0x8 and Q8_0x4
// kernels: per block the q4_0x8TokBlock form of packQ4_0x8T4 (the 32
// quants, da as float32, 8·Σa as int32, which Q8_0x4 does not need), so
// that the kernel reads one compact stream beside the weights.
func prepQ4_0x8(buf, act []byte, cols int) []byte {
	need := cols / 32 * q4_0x8TokBlock
	if cap(buf) < need {
		buf = make([]byte, need)
	}
	buf = buf[:need]
	prepQ4_0x8Rows(buf, act, cols/32)
	return buf
}

// prepQ4_0x8Generic writes the prepQ4_0x8 form of nb blocks of act to
// buf; the avx2 build replaces it with assembly (prepQ4_0x8Rows).
func prepQ4_0x8Generic(buf, act []byte, nb int) {
	for b := 0; b < nb; b++ {
		putQ4_0x8Tok(buf[b*q4_0x8TokBlock:(b+1)*q4_0x8TokBlock], act[34*b:34*b+34])
	}
}

// putQ4_0x8Tok writes the q4_0x8TokBlock form of the Q8_0 block a to o.
func putQ4_0x8Tok(o, a []byte) {
	copy(o[:32], a[2:34])
	sum := 0
	for _, q := range a[2:34] {
		sum += int(int8(q))
	}
	binary.LittleEndian.PutUint32(o[32:], math.Float32bits(f16le(a)))
	binary.LittleEndian.PutUint32(o[36:], uint32(int32(8*sum)))
}
