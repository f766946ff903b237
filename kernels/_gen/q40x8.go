package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The avx512 Q4_0x8 kernels (q40x8_avx512_amd64.s): per (row,
// activation) the arithmetic of the AVX2 Q4_0x8 kernel (q4_0x8_amd64.s):
// VPDPBUSD forms its exact integer sums, lane r of a group's 8 lanes being
// row r, and each block adds fma(float(isum − 8·Σa), dw·da, acc) in the
// same lanes.

// q40x8Rows is dotQ4_0x8AVX512, the decode kernel: groups of 8 rows
// against one activation prepared by prepQ4_0x8, per (row, block) the
// arithmetic of the AVX2 Q4_0x8 kernel. A group is one stream of memory:
// a zmm holds two consecutive blocks of the group (lanes 0..7 block b,
// 8..15 block b+1, the rows in the lanes of the AVX2 kernel), whose
// integer sums VPDPBUSD forms against the two blocks' activation quants
// spread over the halves (VSHUFI32X4 and VPSHUFD); the float work then
// adds block b to the 8-lane accumulator before block b+1, as the AVX2
// kernel does. (Two groups per zmm, one block of each, read two streams
// nb·144 bytes apart, which the memory system served slower: 25 against
// 31 GB/s per CPU second at one thread.)
//
// Registers: SI the group's block, DI the activation's, CX blocks left,
// R14 the prefetch pointer (ahead bytes past the block), Y0 the
// accumulator, Z4 the two blocks' row scales, Z16..Z23 their nibbles
// (x40LoadM's registers), Z8 both blocks' activation quants, K1 and K2
// the low and high halves.
func q40x8Rows() {
	const fn = "x40r"
	TEXT("dotQ4_0x8AVX512", NOSPLIT, "func(out *float32, groups int, w *byte, nb int, aux *byte, ahead int)")
	Pragma("noescape")
	Doc("dotQ4_0x8AVX512 multiplies groups of 8 Q4_0x8 rows with one Q8_0 activation prepared by",
		"prepQ4_0x8, prefetching the weights ahead bytes ahead.")
	Load(Param("out"), R8)
	Load(Param("groups"), R9)
	Load(Param("w"), RSI)
	Load(Param("nb"), R10)
	Load(Param("aux"), R11)
	Load(Param("ahead"), R12)
	MOVL(U32(0x0f0f0f0f), EAX)
	VPBROADCASTD(EAX, Z31)
	MOVL(U32(0x00ff), EAX)
	KMOVW(EAX, K1)
	MOVL(U32(0xff00), EAX)
	KMOVW(EAX, K2)

	Label(label(fn, "group"))
	VPXORD(Y0, Y0, Y0)
	MOVQ(R11, RDI)
	MOVQ(R10, RCX)
	LEAQ(mi(RSI, 0, R12, 1), R14)

	Label(label(fn, "pair"))
	CMPQ(RCX, U8(2))
	JLT(LabelRef(label(fn, "single")))
	for l := 0; l < 5; l++ {
		PREFETCHT0(m(R14, 64*l))
	}
	ADDQ(U32(288), R14)
	// Both blocks' scales and nibbles, block b in the low halves.
	VMOVDQU(m(RSI, 0), X4)
	VINSERTI128(U8(1), m(RSI, 144), Y4, Y4)
	VCVTPH2PS(Y4, Z4)
	for c := 0; c < 4; c++ {
		lo, hi := zr[16+2*c], zr[17+2*c]
		VMOVDQU64(m(RSI, 16+32*c), lo.AsY())
		VINSERTI64X4(U8(1), m(RSI, 144+16+32*c), lo, lo)
		VPSRLW(U8(4), lo, hi)
		VPANDD(Z31, lo, lo)
		VPANDD(Z31, hi, hi)
	}
	// The activation quants of both blocks: Z8 = [b | b+1], then
	// Z9 = their 128-bit lanes 0, 0, 2, 2 and Z10 = 1, 1, 3, 3, so that
	// VPSHUFD spreads quant word j of each block over its half.
	VMOVDQU(m(RDI, 0), Y8)
	VINSERTI64X4(U8(1), m(RDI, 40), Z8, Z8)
	VSHUFI32X4(U8(0xa0), Z8, Z8, Z9)
	VSHUFI32X4(U8(0xf5), Z8, Z8, Z10)
	VPXORD(Z5, Z5, Z5)
	VPXORD(Z6, Z6, Z6)
	for c := 0; c < 4; c++ {
		// Low nibbles of chunk c: quant word c; high: word 4+c.
		lanes, j := Z9, c
		VPSHUFD(U8(0x55*j), lanes, Z12)
		vpdpbusd(Z12, zr[16+2*c], Z5)
		lanes, j = Z10, c
		VPSHUFD(U8(0x55*j), lanes, Z13)
		vpdpbusd(Z13, zr[17+2*c], Z6)
	}
	VPADDD(Z6, Z5, Z5)
	raw("VPSUBD.BCST", m(RDI, 36), Z5, K1, Z5)
	raw("VPSUBD.BCST", m(RDI, 76), Z5, K2, Z5)
	VCVTDQ2PS(Z5, Z5)
	raw("VMULPS.BCST", m(RDI, 32), Z4, K1, Z6)
	raw("VMULPS.BCST", m(RDI, 72), Z4, K2, Z6)
	VFMADD231PS(Y6, Y5, Y0)
	VEXTRACTF32X8(U8(1), Z5, Y7)
	VEXTRACTF32X8(U8(1), Z6, Y14)
	VFMADD231PS(Y14, Y7, Y0)
	ADDQ(U32(288), RSI)
	ADDQ(U32(80), RDI)
	SUBQ(U8(2), RCX)
	JMP(LabelRef(label(fn, "pair")))

	Label(label(fn, "single"))
	TESTQ(RCX, RCX)
	JZ(LabelRef(label(fn, "store")))
	// A last odd block, in ymm: the AVX2 kernel's steps.
	VMOVDQU(m(RSI, 0), X4)
	VCVTPH2PS(X4, Y4)
	VPXORD(Y5, Y5, Y5)
	VPXORD(Y6, Y6, Y6)
	for c := 0; c < 4; c++ {
		lo, hi := zr[16+2*c].AsY(), zr[17+2*c].AsY()
		VMOVDQU64(m(RSI, 16+32*c), lo)
		VPSRLW(U8(4), lo, hi)
		VPANDD(Y31, lo, lo)
		VPANDD(Y31, hi, hi)
		raw("VPDPBUSD.BCST", m(RDI, 4*c), lo, Y5)
		raw("VPDPBUSD.BCST", m(RDI, 16+4*c), hi, Y6)
	}
	VPADDD(Y6, Y5, Y5)
	VPSUBD_BCST(m(RDI, 36), Y5, Y5)
	VCVTDQ2PS(Y5, Y5)
	VMULPS_BCST(m(RDI, 32), Y4, Y6)
	VFMADD231PS(Y6, Y5, Y0)
	ADDQ(U32(144), RSI)

	Label(label(fn, "store"))
	VMOVUPS(Y0, m(R8, 0))
	ADDQ(U8(32), R8)
	DECQ(R9)
	JNZ(LabelRef(label(fn, "group")))
	VZEROUPPER()
	RET()
}

// x40LoadM loads the block at woff(SI) of both groups: the rows' scales as
// float32 in Z4, chunk c's low nibbles (quants 4c..4c+3 of each row,
// unsigned q+8) in Z(16+2c), its high ones (16+4c..19+4c) in Z(17+2c),
// the second group's data merged into the upper
// halves by masked broadcasts from memory (K2: the upper half of a ymm of
// dwords or a zmm of qwords) instead of inserts, which took more of the
// tiles' time; woff is the block's offset from SI.
//
// With gfni the high nibbles take one GF2P8AFFINEQB (matrix in Z30: byte
// bits 4..7 to 0..3) instead of VPSRLW and VPANDD, 4 operations fewer a
// block.
func x40LoadM(woff int, gfni bool) {
	VMOVDQU(m(RSI, woff), X4)
	VBROADCASTI32X4(mi(RSI, woff, R13, 1), K2, Y4)
	VCVTPH2PS(Y4, Z4)
	for c := 0; c < 4; c++ {
		lo, hi := zr[16+2*c], zr[17+2*c]
		VMOVDQU64(m(RSI, woff+16+32*c), lo.AsY())
		VBROADCASTI64X4(mi(RSI, woff+16+32*c, R13, 1), K2, lo)
		if gfni {
			raw("VGF2P8AFFINEQB", U8(0), Z30, lo, hi)
			VPANDD(Z31, lo, lo)
			continue
		}
		VPSRLW(U8(4), lo, hi)
		VPANDD(Z31, lo, lo)
		VPANDD(Z31, hi, hi)
	}
}

// x40Toks accumulates into accs[t] the block of activation t, prepared
// at act(t, 0) by packQ4_0x8TN (q4_0x8TokBlock bytes: 32 quants, da as
// float32, the bias −8·Σa as int32), against the block x40LoadM loaded:
// per activation one chain of integer sums started at the bias (the AVX2
// kernel's sum: integer sums are exact in any order), then
// acc = fma(float(isum), dw·da, acc), the AVX2 kernel's float step.
//
// The activations' chains are interleaved chunk by chunk, so that
// consecutive VPDPBUSDs are independent. The tile is bound by loads
// (some fifty per block at four activations; fewer loads made it faster,
// fewer ALU operations did not), so the quant words of the low 16 bytes
// of each activation's block come from one 16-byte broadcast to every
// 128-bit lane and a VPSHUFD each (one load for four), as many
// activations as free registers allow (all up to 4, keeping two for the
// shuffled words); those of the high 16 bytes stay embedded broadcasts
// (shuffling both halves was slower: the ALU became the bound). Integer
// sums in Z5..Z(4+len(accs)), dw·da in Z13..Z15 and Z28 (the free
// registers otherwise).
//
// With posBias the activation's bias is prepQ4_0x8's +8·Σa instead: the
// sum starts at zero and subtracts it at the end (the same exact sum).
func x40Toks(act func(t, off int) Mem, accs []VecPhysical, gfni, posBias bool) {
	isums := []VecPhysical{Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12}
	prods := []VecPhysical{Z13, Z14, Z15, Z28}
	for t := range accs {
		if posBias {
			VPXORD(isums[t], isums[t], isums[t])
			continue
		}
		VPBROADCASTD(act(t, 36), isums[t])
	}
	free := []VecPhysical{Z29, Z30, Z13, Z14, Z15, Z28}
	if gfni {
		free = []VecPhysical{Z29, Z13, Z14, Z15, Z28} // Z30: the nibble matrix
	}
	free = append(free, isums[len(accs):]...)
	var lanes []VecPhysical // lanes[t]: activation t's quants 0..15 in every 128-bit lane
	for t := range accs {
		if len(free)-len(lanes) <= 2 {
			break
		}
		r := free[len(lanes)]
		VBROADCASTI32X4(act(t, 0), r)
		lanes = append(lanes, r)
	}
	words := free[len(lanes):]
	k := 0
	for c := 0; c < 4; c++ {
		for h := 0; h < 2; h++ {
			for t := range accs {
				if h == 0 && t < len(lanes) {
					w := words[k%len(words)]
					k++
					VPSHUFD(U8(0x55*c), lanes[t], w)
					vpdpbusd(w, zr[16+2*c], isums[t])
					continue
				}
				raw("VPDPBUSD.BCST", act(t, 16*h+4*c), zr[16+2*c+h], isums[t])
			}
		}
	}
	for t, a := range accs {
		p := prods[t%len(prods)]
		if posBias {
			raw("VPSUBD.BCST", act(t, 36), isums[t], isums[t])
		}
		VCVTDQ2PS(isums[t], isums[t])
		VMULPS_BCST(act(t, 32), Z4, p)
		VFMADD231PS(p, isums[t], a)
	}
}

// strided returns the memory operand at off of item t%4 of the four at
// base, stride bytes apart (stride3 holding three strides): activation t
// of a tile's packed four, or its output row.
func strided(base Register, t, off int, stride, stride3 Register) Mem {
	switch t % 4 {
	case 0:
		return m(base, off)
	case 1:
		return mi(base, off, stride, 1)
	case 2:
		return mi(base, off, stride, 2)
	}
	return mi(base, off, stride3, 1)
}

// q40x8Tn is dotQ4_0x8T<tokens>AVX512, the tile of 2 to 8 activations
// (packed by packQ4_0x8TN: activation t's prepQ4_0x8 form, the bias
// negated, at t·nb·40) against groups of 8 rows, two at a time (lanes
// 0..7 of a zmm the first, 8..15 the second, nb·144 bytes on: R13), each
// block's nibbles unpacked once for all the activations; a last odd
// group goes through the same steps with both halves on it (R13 = 0) and
// stores its low 8 lanes (K1). The two groups are two streams, each
// prefetched ahead bytes ahead (five lines per two blocks): a tile of a
// few activations computes little more than decode per byte of weights,
// so it too waits on memory without.
//
// Registers: DI activations 0..3 at the current block, DX 4..7, R14
// their stride, R15 three strides; Z0..Z3 and Z24..Z27 the accumulators
// of activations 0..7; R8 out (activation t at t·R12); AX and BX the
// prefetch distances of the streams; R9 groups left.
func q40x8Tn(tokens int, gfni bool) {
	fn := fmt.Sprintf("x40t%d", tokens)
	name := fmt.Sprintf("dotQ4_0x8T%dAVX512", tokens)
	if gfni {
		fn += "g"
		name += "GFNI"
	}
	TEXT(name, NOSPLIT, "func(out *float32, ostride, groups int, w *byte, nb int, packed *byte, ahead int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s multiplies groups of 8 Q4_0x8 rows with %d Q8_0 activations packed by", name, tokens),
		"packQ4_0x8TN, prefetching each stream of weights ahead bytes ahead.")
	if gfni {
		Doc(fmt.Sprintf("%s multiplies groups of 8 Q4_0x8 rows with %d Q8_0 activations packed by", name, tokens),
			"packQ4_0x8TN, prefetching each stream of weights ahead bytes ahead; it needs GFNI.")
	}
	Load(Param("out"), R8)
	Load(Param("ostride"), R12)
	SHLQ(U8(2), R12)
	Load(Param("groups"), R9)
	Load(Param("w"), RSI)
	Load(Param("nb"), R10)
	Load(Param("packed"), R11)
	MOVQ(R10, R13)
	IMUL3Q(U32(144), R13, R13)
	MOVQ(R10, R14)
	IMUL3Q(U32(40), R14, R14) // activation stride
	LEAQ(mi(R14, 0, R14, 2), R15)
	MOVL(U32(0x0f0f0f0f), EAX)
	VPBROADCASTD(EAX, Z31)
	Load(Param("ahead"), RAX)
	LEAQ(mi(R13, 0, RAX, 1), RBX)
	MOVL(U32(0xffff), ECX)
	KMOVW(ECX, K1)
	MOVL(U32(0xf0), ECX)
	KMOVW(ECX, K2)
	if gfni {
		MOVQ(U64(0x1020408000000000), RCX)
		VPBROADCASTQ(RCX, Z30)
	}

	accs := []VecPhysical{Z0, Z1, Z2, Z3, Z24, Z25, Z26, Z27}[:tokens]
	block := func(woff, aoff int) {
		x40LoadM(woff, gfni)
		x40Toks(func(t, off int) Mem { return strided([]Register{RDI, RDX}[t/4], t, aoff+off, R14, R15) }, accs, gfni, false)
	}

	Label(label(fn, "pair"))
	CMPQ(R9, U8(2))
	JGE(LabelRef(label(fn, "both")))
	XORQ(R13, R13) // a last odd group: both halves on it
	MOVQ(RAX, RBX)
	MOVL(U32(0x00ff), ECX)
	KMOVW(ECX, K1)

	Label(label(fn, "both"))
	for _, a := range accs {
		VPXORD(a, a, a)
	}
	MOVQ(R11, RDI)
	if tokens > 4 {
		LEAQ(mi(R11, 0, R14, 4), RDX)
	}
	MOVQ(R10, RCX)

	Label(label(fn, "block"))
	CMPQ(RCX, U8(2))
	JLT(LabelRef(label(fn, "single")))
	for _, d := range []Register{RAX, RBX} {
		for l := 0; l < 5; l++ {
			PREFETCHT0(mi(RSI, 64*l, d, 1))
		}
	}
	block(0, 0)
	block(144, 40)
	ADDQ(U32(288), RSI)
	ADDQ(U32(80), RDI)
	if tokens > 4 {
		ADDQ(U32(80), RDX)
	}
	SUBQ(U8(2), RCX)
	JMP(LabelRef(label(fn, "block")))

	Label(label(fn, "single"))
	TESTQ(RCX, RCX)
	JZ(LabelRef(label(fn, "store")))
	block(0, 0)
	ADDQ(U32(144), RSI)

	// Activation t's outputs at R8 + t·R12: CX three strides, DX four
	// on.
	Label(label(fn, "store"))
	LEAQ(mi(R12, 0, R12, 2), RCX)
	LEAQ(mi(R8, 0, R12, 4), RDX)
	for t, a := range accs {
		VMOVUPS(a, K1, strided([]Register{R8, RDX}[t/4], t, 0, R12, RCX))
	}
	ADDQ(U8(64), R8)
	ADDQ(R13, RSI) // past the second group
	SUBQ(U8(2), R9)
	JG(LabelRef(label(fn, "pair")))
	VZEROUPPER()
	RET()
}

// x16Load loads the block at woff(SI) of a Q4_0x16 group (288 bytes: the
// 16 rows' fp16 scales, then four 64-byte chunks, chunk c the first
// Q4_0x8 group's 32 bytes of it, then the second's) into x40LoadM's
// registers: one conversion and four plain loads, lane r of each zmm row
// r of the 16, so no merges and one stream of memory.
func x16Load(woff int, gfni bool) {
	VCVTPH2PS(m(RSI, woff), Z4)
	for c := 0; c < 4; c++ {
		lo, hi := zr[16+2*c], zr[17+2*c]
		VMOVDQU64(m(RSI, woff+32+64*c), lo)
		if gfni {
			raw("VGF2P8AFFINEQB", U8(0), Z30, lo, hi)
			VPANDD(Z31, lo, lo)
			continue
		}
		VPSRLW(U8(4), lo, hi)
		VPANDD(Z31, lo, lo)
		VPANDD(Z31, hi, hi)
	}
}

// q40x16Tn is dotQ4_0x16T<tokens>AVX512 (tokens 2..8), the tile of
// activations packed by packQ4_0x8TN, or for tokens = 1
// dotQ4_0x16AVX512, the decode kernel, on one activation prepared by
// prepQ4_0x8 (its bias +8·Σa), against groups of 16 Q4_0x16 rows: per
// group one zmm accumulator per activation (lane r row r), per block the
// arithmetic of q40x8Tn's tile (x40Toks), so each (row, activation) gets
// the AVX2 Q4_0x8 kernel's sums in its order. A group is one stream,
// prefetched ahead bytes ahead (nine lines per two blocks); there is no
// odd group (Q4_0x16 matrices are whole groups of 16 rows).
//
// Registers: as q40x8Tn's, with RAX the prefetch distance and no second
// stream.
func q40x16Tn(tokens int, gfni bool) {
	fn := fmt.Sprintf("x16t%d", tokens)
	name := fmt.Sprintf("dotQ4_0x16T%dAVX512", tokens)
	if tokens == 1 {
		name = "dotQ4_0x16AVX512"
	}
	if gfni {
		fn += "g"
		name += "GFNI"
	}
	need := ""
	if gfni {
		need = "; it needs GFNI"
	}
	if tokens == 1 {
		TEXT(name, NOSPLIT, "func(out *float32, groups int, w *byte, nb int, aux *byte, ahead int)")
		Pragma("noescape")
		Doc(fmt.Sprintf("%s multiplies groups of 16 Q4_0x16 rows with one Q8_0 activation prepared by", name),
			"prepQ4_0x8, prefetching the weights ahead bytes ahead"+need+".")
		Load(Param("out"), R8)
	} else {
		TEXT(name, NOSPLIT, "func(out *float32, ostride, groups int, w *byte, nb int, packed *byte, ahead int)")
		Pragma("noescape")
		Doc(fmt.Sprintf("%s multiplies groups of 16 Q4_0x16 rows with %d Q8_0 activations packed by", name, tokens),
			"packQ4_0x8TN, prefetching the weights ahead bytes ahead"+need+".")
		Load(Param("out"), R8)
		Load(Param("ostride"), R12)
		SHLQ(U8(2), R12)
	}
	Load(Param("groups"), R9)
	Load(Param("w"), RSI)
	Load(Param("nb"), R10)
	if tokens == 1 {
		Load(Param("aux"), R11)
	} else {
		Load(Param("packed"), R11)
	}
	MOVQ(R10, R14)
	IMUL3Q(U32(40), R14, R14) // activation stride
	LEAQ(mi(R14, 0, R14, 2), R15)
	MOVL(U32(0x0f0f0f0f), EAX)
	VPBROADCASTD(EAX, Z31)
	Load(Param("ahead"), RAX)
	if gfni {
		MOVQ(U64(0x1020408000000000), RCX)
		VPBROADCASTQ(RCX, Z30)
	}

	accs := []VecPhysical{Z0, Z1, Z2, Z3, Z24, Z25, Z26, Z27}[:tokens]
	block := func(woff, aoff int) {
		x16Load(woff, gfni)
		x40Toks(func(t, off int) Mem { return strided([]Register{RDI, RDX}[t/4], t, aoff+off, R14, R15) }, accs, gfni, tokens == 1)
	}

	Label(label(fn, "group"))
	for _, a := range accs {
		VPXORD(a, a, a)
	}
	MOVQ(R11, RDI)
	if tokens > 4 {
		LEAQ(mi(R11, 0, R14, 4), RDX)
	}
	MOVQ(R10, RCX)

	Label(label(fn, "block"))
	CMPQ(RCX, U8(2))
	JLT(LabelRef(label(fn, "single")))
	for l := 0; l < 9; l++ {
		PREFETCHT0(mi(RSI, 64*l, RAX, 1))
	}
	block(0, 0)
	block(288, 40)
	ADDQ(U32(576), RSI)
	ADDQ(U32(80), RDI)
	if tokens > 4 {
		ADDQ(U32(80), RDX)
	}
	SUBQ(U8(2), RCX)
	JMP(LabelRef(label(fn, "block")))

	Label(label(fn, "single"))
	TESTQ(RCX, RCX)
	JZ(LabelRef(label(fn, "store")))
	block(0, 0)
	ADDQ(U32(288), RSI)

	// Activation t's outputs at R8 + t·R12: CX three strides, DX four
	// on.
	Label(label(fn, "store"))
	if tokens > 1 {
		LEAQ(mi(R12, 0, R12, 2), RCX)
		LEAQ(mi(R8, 0, R12, 4), RDX)
	}
	for t, a := range accs {
		VMOVUPS(a, strided([]Register{R8, RDX}[t/4], t, 0, R12, RCX))
	}
	ADDQ(U8(64), R8)
	DECQ(R9)
	JNZ(LabelRef(label(fn, "group")))
	VZEROUPPER()
	RET()
}
