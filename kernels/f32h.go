package kernels

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	"github.com/qsf-llm/qsf/quant"
)

// F32H is the element type of an F32 matrix that PackF32H has stored
// losslessly in 28 bits a weight at load time, for tiers that read it
// faster than the 32 bits of F32 because they read fewer bytes (decode of
// a large F32 model is bound by memory bandwidth). It is never stored in
// a file: its value lies outside ggml's type ids. MatVec, Pool.MatVec,
// Pool.MatVecs, MatMul and Pool.MatMul accept it like any other type,
// with F32 activations, and give the same results, bit for bit, as for
// the F32 matrix it was packed from: every weight decodes to the file's
// bits, and the kernels multiply them in F32's order.
//
// A row of cols weights (cols a multiple of 128) is F32HRowBytes(cols)
// bytes, a multiple of 64: a 64-byte header, then one 448-byte superchunk
// for each 128 columns. The header's first 16 bytes are the row's table of
// high bytes (a float's sign and its exponent's top 7 bits); byte 16 is
// the number n of escapes (0..15), and bytes 17+3i..19+3i escape i: the
// column (uint16, little-endian) and high byte of a weight whose high
// byte is not in the table (its code is 0); the rest is zero. A
// superchunk holds three planes, in the order the kernel reads them:
// bytes 0..63 the 4-bit table codes of its 128 weights (byte k holds the
// code of the weight of third byte k in its low nibble, of third byte
// 64+k in its high one), bytes 64..191 their third bytes, and bytes
// 192..447 their low 16 bits (32 words a 64-byte line). The weights lie
// in the planes in the order that makes the avx512 kernel's in-lane
// unpacks (VPUNPCK{L,H}BW of third and high bytes, then VPUNPCK{L,H}WD
// with the low words) put them in column order: column 16g+d, g = 2x+h,
// d = 4l+i, is word 32x+8l+4h+i and third byte 64⌊x/2⌋+16l+8(x mod 2)+4h+i
// (f32hPos). Every load of the kernel is then
// one aligned 64-byte line, and its shuffles stay within 128-bit lanes.
//
// Weights of a Gaussian-like distribution, as trained and synthetic
// models have, span fewer than 16 high bytes in almost every row (two
// binades each for either sign); a 12L-768 synthetic model has 30 escapes
// in 159232 rows. PackF32H refuses a matrix with a row of more escapes.
const F32H = quant.Type(1<<16 | uint32(quant.F32))

const (
	f32hHeader   = 64  // bytes of a row's header
	f32hCols     = 128 // columns of a superchunk
	f32hChunk    = 448 // bytes of a superchunk
	f32hEscapes  = 15  // escapes a row's header holds
	f32hEscBytes = 3   // bytes of an escape
)

// f32hTraits is the traits row of F32H: F32's, with no functions.
var f32hTraits = repackedTraits(quant.F32, F32H)

// F32HRowBytes returns the size of an F32H row of cols weights, and false
// when cols is not a positive multiple of 128.
func F32HRowBytes(cols int) (int, bool) {
	if cols <= 0 || cols%f32hCols != 0 {
		return 0, false
	}
	return f32hHeader + cols/f32hCols*f32hChunk, true
}

// PacksF32H reports whether tr reads an F32 matrix of cols columns faster
// packed as F32H (PackF32H) than as it is: whether it has a kernel of its
// own for F32H (the avx512 tier) and cols is a multiple of 128.
func (tr *Tier) PacksF32H(cols int) bool {
	_, ok := F32HRowBytes(cols)
	k, native := tr.table[F32H]
	return ok && native && k.rows != nil && k.rowsTier != genericTier.name
}

// PackF32H writes the F32H form of the rows×cols F32 matrix src (as
// stored in a GGUF file) to dst, which must be rows·F32HRowBytes(cols)
// bytes and must not overlap src. It returns an error wrapping ErrRepack
// when cols is not a multiple of 128, the lengths are wrong, or a row has
// weights of more high bytes than its table and escapes hold (dst is then
// partly written). F32HFits tells the last case beforehand.
func PackF32H(dst, src []byte, rows, cols int) error {
	rb, ok := F32HRowBytes(cols)
	if !ok {
		return fmt.Errorf("%w: F32H needs a multiple of 128 columns, not %d", ErrRepack, cols)
	}
	if rows < 0 || len(src) != rows*4*cols || len(dst) != rows*rb {
		return fmt.Errorf("%w: F32 %d×%d needs %d bytes and %d packed, got %d and %d", ErrRepack, rows, cols, rows*4*cols, rows*rb, len(src), len(dst))
	}
	for r := 0; r < rows; r++ {
		if !packF32HRow(dst[r*rb:(r+1)*rb], src[r*4*cols:(r+1)*4*cols], cols) {
			return fmt.Errorf("%w: F32 row %d has more than %d weights of high bytes outside its 16 most frequent", ErrRepack, r, f32hEscapes)
		}
	}
	return nil
}

// F32HFits reports whether PackF32H can pack the rows×cols F32 matrix src:
// whether cols is a multiple of 128 and the weights of each row have at
// most 16 high bytes but f32hEscapes weights.
func F32HFits(src []byte, rows, cols int) bool {
	if _, ok := F32HRowBytes(cols); !ok || len(src) != rows*4*cols {
		return false
	}
	for r := 0; r < rows; r++ {
		var table [16]byte
		if _, esc := f32hTable(&table, src[r*4*cols:(r+1)*4*cols]); esc > f32hEscapes {
			return false
		}
	}
	return true
}

// f32hTable fills table with the 16 most frequent high bytes of the F32
// row src (ties to the smaller byte; bytes that do not occur last, zero),
// sorted, and returns the code of each high byte (0 for the rest) and the
// number of weights whose high byte is not in the table.
func f32hTable(table *[16]byte, src []byte) (code [256]byte, escapes int) {
	// Four histograms, summed after: runs of equal bytes then update
	// four counters in turn instead of waiting on one.
	var counts [4][256]int32
	i := 3
	for ; i+12 < len(src); i += 16 {
		counts[0][src[i]]++
		counts[1][src[i+4]]++
		counts[2][src[i+8]]++
		counts[3][src[i+12]]++
	}
	for ; i < len(src); i += 4 {
		counts[0][src[i]]++
	}
	var count [256]int32
	for b := range count {
		count[b] = counts[0][b] + counts[1][b] + counts[2][b] + counts[3][b]
	}
	var buf [256]byte
	order := buf[:0]
	for b := range 256 {
		if count[b] > 0 {
			order = append(order, byte(b))
		}
	}
	if len(order) > 16 {
		slices.SortStableFunc(order, func(a, b byte) int { return int(count[b]) - int(count[a]) })
		for _, b := range order[16:] {
			escapes += int(count[b])
		}
		order = order[:16]
	}
	for b := 0; len(order) < 16; b++ {
		if count[b] == 0 {
			order = append(order, byte(b))
		}
	}
	slices.Sort(order)
	for i, b := range order {
		table[i] = b
		code[b] = byte(i)
	}
	return code, escapes
}

// f32hPos returns where column i (0..127) of a superchunk lies in its
// planes: its low word at 192+2·word, its third byte at 64+third, its
// code in the nibble of byte third%64 at bit 4·⌊third/64⌋.
func f32hPos(i int) (word, third int) {
	g, d := i/16, i%16
	x, h, l, j := g/2, g%2, d/4, d%4
	return 32*x + 8*l + 4*h + j, 64*(x/2) + 16*l + 8*(x%2) + 4*h + j
}

// f32hPlanes is f32hPos of every column of a superchunk: the offsets of
// its low word, third byte and code byte in the superchunk, and its code's
// shift.
var f32hPlanes = func() (p [f32hCols]struct{ word, third, code, shift uint16 }) {
	for i := range p {
		w, t := f32hPos(i)
		p[i].word, p[i].third, p[i].code, p[i].shift = uint16(192+2*w), uint16(64+t), uint16(t%64), uint16(4*(t/64))
	}
	return p
}()

// packF32HRow writes the F32H form of the F32 row src of cols weights to
// dst, and reports whether it fits (at most f32hEscapes escapes).
func packF32HRow(dst, src []byte, cols int) bool {
	var table [16]byte
	code, esc := f32hTable(&table, src)
	if esc > f32hEscapes {
		return false
	}
	clear(dst[:f32hHeader])
	copy(dst, table[:])
	var inTable [256]bool
	for _, b := range table {
		inTable[b] = true
	}
	n := 0
	for c := 0; c < cols/f32hCols; c++ {
		o := dst[f32hHeader+c*f32hChunk:][:f32hChunk]
		clear(o[:64])
		s := src[4*f32hCols*c:][:4*f32hCols]
		for i := range f32hPlanes {
			at := &f32hPlanes[i]
			v := s[4*i : 4*i+4]
			o[at.word], o[at.word+1], o[at.third] = v[0], v[1], v[2]
			if hb := v[3]; inTable[hb] {
				o[at.code] |= code[hb] << at.shift
				continue
			}
			e := dst[17+f32hEscBytes*n:]
			binary.LittleEndian.PutUint16(e, uint16(f32hCols*c+i))
			e[2] = v[3]
			n++
		}
	}
	dst[16] = byte(n)
	return true
}

// decodeF32HRow writes the F32 form of the F32H row src of cols weights
// to dst (4·cols bytes): the portable decoder, and the reference of the
// avx512 tier's.
func decodeF32HRow(dst, src []byte, cols int) {
	for c := 0; c < cols/f32hCols; c++ {
		o := src[f32hHeader+c*f32hChunk:][:f32hChunk]
		for i := 0; i < f32hCols; i++ {
			col := f32hCols*c + i
			at := &f32hPlanes[i]
			d := dst[4*col : 4*col+4]
			d[0], d[1], d[2] = o[at.word], o[at.word+1], o[at.third]
			d[3] = src[o[at.code]>>at.shift&15]
		}
	}
	patchF32HRow(dst, src)
}

// patchF32HRow writes the escapes of the F32H row src into its F32 form
// dst, decoded as if their codes were right.
func patchF32HRow(dst, src []byte) {
	for i := 0; i < int(src[16]); i++ {
		e := src[17+f32hEscBytes*i:]
		dst[4*int(binary.LittleEndian.Uint16(e))+3] = e[2]
	}
}

// f32hScratchPool recycles the F32 rows the F32H kernels decode into.
var f32hScratchPool = sync.Pool{New: func() any { return new([]byte) }}

// f32hScratch returns a buffer of n bytes from f32hScratchPool; put it
// back with f32hScratchPool.Put(p).
func f32hScratch(n int) (*[]byte, []byte) {
	p := f32hScratchPool.Get().(*[]byte)
	if cap(*p) < n {
		*p = make([]byte, n)
	}
	return p, (*p)[:n]
}

// f32hGeneric is the generic tier's F32H kernel: each row decoded, then
// F32's dot product.
func f32hGeneric(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	p, row := f32hScratch(4 * cols)
	for r := range out {
		decodeF32HRow(row, w[r*rowBytes:(r+1)*rowBytes], cols)
		out[r] = f32Traits.Dot(cols, row, act)
	}
	f32hScratchPool.Put(p)
}

// f32Traits is F32's traits row.
var f32Traits = func() *quant.Traits {
	tr, err := quant.Lookup(quant.F32)
	if err != nil {
		panic(err)
	}
	return tr
}()

// DecodeF32H writes the F32 form of the rows×cols F32H matrix src to dst
// (rows·4·cols bytes), the bits PackF32H packed. It returns an error
// wrapping ErrRepack when the lengths are wrong.
func DecodeF32H(dst, src []byte, rows, cols int) error {
	rb, ok := F32HRowBytes(cols)
	if !ok || rows < 0 || len(src) != rows*rb || len(dst) != rows*4*cols {
		return fmt.Errorf("%w: F32H %d×%d: lengths %d and %d", ErrRepack, rows, cols, len(src), len(dst))
	}
	for r := 0; r < rows; r++ {
		decodeF32HRow(dst[r*4*cols:(r+1)*4*cols], src[r*rb:(r+1)*rb], cols)
	}
	return nil
}
