package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// f32Rows is dotF32AVX512 (float_avx512_amd64.s): dotF32AVX2 with two of
// ggml_vec_dot_f32's four 8-lane accumulators per zmm (Z0: a0, a1; Z1:
// a2, a3: each lane sees the elements its ymm lane does), reduced in
// ggml's order: (a0+a2)+(a1+a3), then the halves, then two horizontal
// adds. The rows lie back to back, so the matrix is one stream of memory,
// which the hardware prefetchers follow: software prefetches only cost
// load slots (about 3% of a one-thread decode step's read speed on Zen
// 5). The loop takes two chunks a turn, the weights and the activation at
// one index, so that more of the window of instructions in flight is
// loads ahead.
func f32Rows() {
	const fn = "f32z"
	TEXT("dotF32AVX512", NOSPLIT, "func(out *float32, rows int, w *byte, chunks, rowBytes int, act *byte)")
	Pragma("noescape")
	Doc("dotF32AVX512 computes out[r] = dot(row r, act) of F32 rows, chunks of 32 columns each,",
		"in ggml_vec_dot_f32's order.")
	out, rows, w, rowBytes, act := R8, R9, RSI, R12, R11
	end, pairs, i := R10, R13, RBX
	Load(Param("out"), out)
	Load(Param("rows"), rows)
	Load(Param("w"), w)
	Load(Param("chunks"), end)
	Load(Param("rowBytes"), rowBytes)
	Load(Param("act"), act)
	// end: the bytes of a row's chunks; pairs: those of its whole pairs.
	SHLQ(U8(7), end)
	MOVQ(end, pairs)
	ANDQ(I32(-256), pairs)

	Label(label(fn, "row"))
	VPXORD(Z0, Z0, Z0)
	VPXORD(Z1, Z1, Z1)
	XORQ(i, i)
	TESTQ(pairs, pairs)
	JZ(LabelRef(label(fn, "tail")))

	Label(label(fn, "pair"))
	for c := 0; c < 2; c++ {
		a, b := zmm(4+2*c), zmm(5+2*c)
		VMOVUPS(mi(w, 128*c, i, 1), a)
		VMOVUPS(mi(w, 128*c+64, i, 1), b)
		VFMADD231PS(mi(act, 128*c, i, 1), a, Z0)
		VFMADD231PS(mi(act, 128*c+64, i, 1), b, Z1)
	}
	ADDQ(U32(256), i)
	CMPQ(i, pairs)
	JNE(LabelRef(label(fn, "pair")))

	Label(label(fn, "tail"))
	CMPQ(i, end)
	JEQ(LabelRef(label(fn, "done")))
	VMOVUPS(mi(w, 0, i, 1), Z4)
	VMOVUPS(mi(w, 64, i, 1), Z5)
	VFMADD231PS(mi(act, 0, i, 1), Z4, Z0)
	VFMADD231PS(mi(act, 64, i, 1), Z5, Z1)

	Label(label(fn, "done"))
	VADDPS(Z1, Z0, Z0) // [a0+a2 | a1+a3]
	VEXTRACTF64X4(U8(1), Z0, Y1)
	VADDPS(Y1, Y0, Y0)
	VEXTRACTF128(U8(1), Y0, X1)
	VADDPS(X1, X0, X0)
	VHADDPS(X0, X0, X0)
	VHADDPS(X0, X0, X0)
	VMOVSS(X0, m(out, 0))
	ADDQ(U32(4), out)
	ADDQ(rowBytes, w)
	DECQ(rows)
	JNZ(LabelRef(label(fn, "row")))
	VZEROUPPER()
	RET()
}

// f32R3T8 is dotF32R3T8AVX512 (float_avx512_amd64.s): the F32 block of
// three rows × eight activations. ggml's four 8-lane accumulators of a dot
// cover the floats 32i+8j..32i+8j+7 of chunk i: a zmm holds two of them,
// a0, a1 (the 16 floats at 32i) or a2, a3 (those at 32i+16), so two
// passes over the rows, pass 0 over bytes 0..63 and pass 1 over bytes
// 64..127 of every 128-byte chunk, do dotF32AVX2's FMAs lane for lane,
// with 24 accumulators (activation t, row r in Z(3t+r)): each loaded
// chunk of a row is used eight times, each of an activation three times.
//
// Pass 0 keeps its sums in the block's scratch (24 zmm, then pass 1's
// 24 when the block resumes later: flags f32Resume, f32Finish as the
// other block kernels). The finish adds pass 0's sums to pass 1's, a zmm
// then holding [a0+a2 | a1+a3], and reduces 24 of them at once with
// shuffles in ggml's order: the two halves, then the two 128-bit halves,
// then the two horizontal adds, which leave activation t's three sums in
// lanes 0..2 of a 128-bit lane; a masked store writes them. Pass 0
// prefetches the second line of each 128 bytes of the rows, which pass 1
// reads, and the rows of later calls into L2 (far); pass 1 the first
// line of the next block's rows.
func f32R3T8() {
	const fn = "f32r3t8"
	TEXT("dotF32R3T8AVX512", NOSPLIT, "func(out *float32, ostride, blocks int, w *byte, chunks, rowBytes int, act *byte, actStride int, scratch *float32, sstride, flags int, far uintptr)")
	Pragma("noescape")
	Doc("dotF32R3T8AVX512 computes blocks of three F32 rows × eight activations",
		"(f32T8AVX512), in ggml_vec_dot_f32's order; scratch holds a block's sums",
		"between slabs of columns, sstride bytes per block. Pass 0 of every block",
		"prefetches one line a chunk into L2 from address far on (a hint: any",
		"address will do).")
	out, blocks, w, rowBytes := R8, R9, RSI, R12
	act, actStride, act3, scratch := R11, R13, RDX, RDI
	pass, rp, pf, a0, a4, cnt := R10, RAX, RBX, R15, R14, RCX
	Load(Param("out"), out)
	Load(Param("blocks"), blocks)
	Load(Param("w"), w)
	Load(Param("rowBytes"), rowBytes)
	Load(Param("act"), act)
	Load(Param("actStride"), actStride)
	LEAQ(mi(actStride, 0, actStride, 2), act3)
	Load(Param("scratch"), scratch)
	flags, _ := Param("flags").Resolve()

	Label(label(fn, "block"))
	XORQ(pass, pass)

	Label(label(fn, "pass"))
	TESTQ(U32(1), flags.Addr)
	JNZ(LabelRef(label(fn, "resume")))
	for k := 0; k < 24; k++ {
		VPXORD(zmm(k), zmm(k), zmm(k))
	}
	JMP(LabelRef(label(fn, "start")))
	Label(label(fn, "resume"))
	// Pass j's sums are at 1536j = 24·(64j) bytes.
	LEAQ(mi(pass, 0, pass, 2), pf)
	for k := 0; k < 24; k++ {
		VMOVUPS(mi(scratch, 64*k, pf, 8), zmm(k))
	}

	Label(label(fn, "start"))
	LEAQ(mi(w, 0, pass, 1), rp)
	LEAQ(mi(act, 0, pass, 1), a0)
	LEAQ(mi(a0, 0, actStride, 4), a4)
	Load(Param("chunks"), cnt)
	CMPQ(pass, U8(64))
	JEQ(LabelRef(label(fn, "pass1")))
	// Pass 0 prefetches the second line of each 128 bytes of the rows,
	// which pass 1 reads, and one line a chunk from far on into L2 (the
	// rows the next calls read).
	Load(Param("far"), pf)
	Label(label(fn, "chunk0"))
	PREFETCHT0(m(rp, 64))
	PREFETCHT0(mi(rp, 64, rowBytes, 1))
	PREFETCHT0(mi(rp, 64, rowBytes, 2))
	PREFETCHT1(m(pf, 0))
	f32R3T8Chunk(rp, a0, a4, actStride, act3, rowBytes)
	ADDQ(U32(64), pf)
	DECQ(cnt)
	JNZ(LabelRef(label(fn, "chunk0")))
	Store(pf, Param("far"))
	JMP(LabelRef(label(fn, "end")))
	// Pass 1 prefetches the first line of the next block's rows.
	Label(label(fn, "pass1"))
	LEAQ(mi(w, 0, rowBytes, 2), pf)
	ADDQ(rowBytes, pf)
	Label(label(fn, "chunk1"))
	PREFETCHT0(m(pf, 0))
	PREFETCHT0(mi(pf, 0, rowBytes, 1))
	PREFETCHT0(mi(pf, 0, rowBytes, 2))
	f32R3T8Chunk(rp, a0, a4, actStride, act3, rowBytes)
	ADDQ(U32(128), pf)
	DECQ(cnt)
	JNZ(LabelRef(label(fn, "chunk1")))
	Label(label(fn, "end"))

	// Pass 0 always keeps its sums; pass 1 only when the block resumes
	// later.
	CMPQ(pass, U8(64))
	JNE(LabelRef(label(fn, "save")))
	TESTQ(U32(2), flags.Addr)
	JNZ(LabelRef(label(fn, "finish")))
	Label(label(fn, "save"))
	LEAQ(mi(pass, 0, pass, 2), pf)
	for k := 0; k < 24; k++ {
		VMOVUPS(zmm(k), mi(scratch, 64*k, pf, 8))
	}
	ADDQ(U8(64), pass)
	CMPQ(pass, U32(128))
	JNE(LabelRef(label(fn, "pass")))
	JMP(LabelRef(label(fn, "next")))

	Label(label(fn, "finish"))
	f32R3T8Finish(out)

	Label(label(fn, "next"))
	Load(Param("sstride"), pf)
	ADDQ(pf, scratch)
	ADDQ(U8(12), out)
	LEAQ(mi(w, 0, rowBytes, 2), w)
	ADDQ(rowBytes, w)
	DECQ(blocks)
	JNZ(LabelRef(label(fn, "block")))
	VZEROUPPER()
	RET()
}

// f32R3T8Chunk multiplies one chunk of the three rows at rp (the 16
// floats of the pass) by the eight activations' (a0 the first four, a4 the
// others), into the accumulators Z(3t+r), and moves rp, a0 and a4 to the
// next chunk.
func f32R3T8Chunk(rp, a0, a4, actStride, act3, rowBytes GPPhysical) {
	rows := []VecPhysical{Z24, Z25, Z26}
	av := Z27
	VMOVUPS(m(rp, 0), rows[0])
	VMOVUPS(mi(rp, 0, rowBytes, 1), rows[1])
	VMOVUPS(mi(rp, 0, rowBytes, 2), rows[2])
	for t := 0; t < 8; t++ {
		base := a0
		if t >= 4 {
			base = a4
		}
		var src Mem
		switch t % 4 {
		case 0:
			src = m(base, 0)
		case 1:
			src = mi(base, 0, actStride, 1)
		case 2:
			src = mi(base, 0, actStride, 2)
		case 3:
			src = mi(base, 0, act3, 1)
		}
		VMOVUPS(src, av)
		for r := 0; r < 3; r++ {
			VFMADD231PS(av, rows[r], zmm(3*t+r))
		}
	}
	ADDQ(U32(128), rp)
	ADDQ(U32(128), a0)
	ADDQ(U32(128), a4)
}

// f32R3T8Finish is the finish of dotF32R3T8AVX512 (pass 1's sums in
// Z0..Z23, pass 0's at scratch RDI): the 24 sums, activation t's three at
// out + t·ostride.
func f32R3T8Finish(out GPPhysical) {
	acc := func(t, r int) VecPhysical { return zmm(3*t + r) }
	u, v := Z28, Z29
	// [a0|a1] + [a2|a3] = [a0+a2 | a1+a3].
	for k := 0; k < 24; k++ {
		VADDPS(m(RDI, 64*k), zmm(k), zmm(k))
	}
	// x = (a0+a2) + (a1+a3): activations 2p and 2p+1 of a row share a
	// zmm, [x(2p) | x(2p+1)], in acc(2p, r).
	for r := 0; r < 3; r++ {
		for p := 0; p < 4; p++ {
			a, b := acc(2*p, r), acc(2*p+1, r)
			VSHUFF64X2(U8(0x44), b, a, u) // [a.lo | b.lo]
			VSHUFF64X2(U8(0xee), b, a, v) // [a.hi | b.hi]
			VADDPS(v, u, a)
		}
	}
	// t0 = x's low 128 bits + its high 128 bits: activations 4q..4q+3
	// of a row, one per 128-bit lane, in acc(4q, r).
	for r := 0; r < 3; r++ {
		for q := 0; q < 2; q++ {
			a, b := acc(4*q, r), acc(4*q+2, r)
			VSHUFF32X4(U8(0x88), b, a, u) // the low 128 bits of the four
			VSHUFF32X4(U8(0xdd), b, a, v) // the high ones
			VADDPS(v, u, a)
		}
	}
	// Two horizontal adds in each 128-bit lane: (t0[0]+t0[1]) +
	// (t0[2]+t0[3]). The first gives [h0(r0), h1(r0), h0(r1), h1(r1)]
	// and [h0(r2), h1(r2), h0(r2), h1(r2)], the second [r0, r1, r2, r2].
	for q := 0; q < 2; q++ {
		r0, r1, r2 := acc(4*q, 0), acc(4*q, 1), acc(4*q, 2)
		VSHUFPS(U8(0x88), r1, r0, u)
		VSHUFPS(U8(0xdd), r1, r0, v)
		VADDPS(v, u, r0)
		VSHUFPS(U8(0x88), r2, r2, u)
		VSHUFPS(U8(0xdd), r2, r2, v)
		VADDPS(v, u, r2)
		VSHUFPS(U8(0x88), r2, r0, u)
		VSHUFPS(U8(0xdd), r2, r0, v)
		VADDPS(v, u, r0)
	}
	// Activation t = 4q+l's sums are lanes 0..2 of 128-bit lane l of
	// acc(4q, 0).
	os, os3, hi := RBX, RAX, R15
	Load(Param("ostride"), os)
	SHLQ(U8(2), os)
	LEAQ(mi(os, 0, os, 2), os3)
	LEAQ(mi(out, 0, os, 4), hi)
	MOVL(U32(7), ECX)
	KMOVW(ECX, K1)
	for t := 0; t < 8; t++ {
		z := acc(4*(t/4), 0)
		x := z.AsX()
		if t%4 != 0 {
			VEXTRACTF32X4(U8(t%4), z, X28)
			x = X28
		}
		base := out
		if t >= 4 {
			base = hi
		}
		var dst Mem
		switch t % 4 {
		case 0:
			dst = m(base, 0)
		case 1:
			dst = mi(base, 0, os, 1)
		case 2:
			dst = mi(base, 0, os, 2)
		case 3:
			dst = mi(base, 0, os3, 1)
		}
		VMOVUPS(x, K1, dst)
	}
}

// zmm returns Z(i).
func zmm(i int) VecPhysical {
	return []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15,
		Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31}[i]
}

// f16Rows8 is dotF16F32AVX512 (float_avx512_amd64.s): dotF16F32AVX2
// (ggml_vec_dot_f16 of f16 rows with a float32 vector, the attention's
// dots over an f16 cache) for eight rows at once. A row's four 8-lane
// accumulators go two per zmm as in dotF32AVX512 (Z(2r): a0, a1; Z(2r+1):
// a2, a3), the vector's chunk loaded once for the eight rows; a partial
// last chunk of rem elements (x from tail) updates only its lanes below
// rem, as the AVX2 kernel's blends do. The eight sums are reduced at once
// with shuffles in ggml's order ((a0+a2)+(a1+a3), the halves, two
// horizontal adds) and stored as one vector. Each chunk prefetches the
// line pf bytes after each row's.
func f16Rows8() {
	const fn = "f16r8"
	TEXT("dotF16F32AVX512", NOSPLIT, "func(out *float32, blocks int, w *uint16, chunks, rowBytes int, x *float32, rem int, tail *float32, pf int)")
	Pragma("noescape")
	Doc("dotF16F32AVX512 computes out[r] = dot(row r, x) of blocks·8 f16 rows in",
		"ggml_vec_dot_f16's order (dotF16F32AVX2's sums), with rem elements of a",
		"partial last chunk whose x is at tail, prefetching pf bytes ahead.")
	out, blocks, w, chunks, rowBytes := R8, R9, RSI, R10, R12
	x, pfA, pfB, pf := R11, R13, R14, R15
	b0, b4, r3, xp, cnt := RBX, RAX, RDX, RDI, RCX
	Load(Param("out"), out)
	Load(Param("blocks"), blocks)
	Load(Param("w"), w)
	Load(Param("chunks"), chunks)
	Load(Param("rowBytes"), rowBytes)
	Load(Param("x"), x)
	Load(Param("pf"), pf)
	LEAQ(mi(rowBytes, 0, rowBytes, 2), r3)
	// K1, K2: the lanes below rem of a partial chunk's two halves.
	Load(Param("rem"), RCX)
	MOVQ(U32(1), RAX)
	SHLQ(CL, RAX)
	DECQ(RAX)
	KMOVW(EAX, K1)
	SHRQ(U8(16), RAX)
	KMOVW(EAX, K2)
	perm := u64s("f16r8perm", 0|4<<32, 8|12<<32, 1|5<<32, 9|13<<32)

	rowMem := func(r, disp int) Mem {
		base := b0
		if r >= 4 {
			base = b4
		}
		switch r % 4 {
		case 0:
			return m(base, disp)
		case 1:
			return mi(base, disp, rowBytes, 1)
		case 2:
			return mi(base, disp, rowBytes, 2)
		}
		return mi(base, disp, r3, 1)
	}
	pfMem := func(r int) Mem {
		base := pfA
		if r >= 4 {
			base = pfB
		}
		switch r % 4 {
		case 0:
			return m(base, 0)
		case 1:
			return mi(base, 0, rowBytes, 1)
		case 2:
			return mi(base, 0, rowBytes, 2)
		}
		return mi(base, 0, r3, 1)
	}
	xlo, xhi, t0, t1 := Z16, Z17, Z20, Z21

	Label(label(fn, "block"))
	for k := 0; k < 16; k++ {
		VPXORD(zmm(k), zmm(k), zmm(k))
	}
	MOVQ(w, b0)
	LEAQ(mi(w, 0, rowBytes, 4), b4)
	LEAQ(mi(b0, 0, pf, 1), pfA)
	LEAQ(mi(b4, 0, pf, 1), pfB)
	MOVQ(x, xp)
	MOVQ(chunks, cnt)
	TESTQ(cnt, cnt)
	JZ(LabelRef(label(fn, "part")))

	Label(label(fn, "chunk"))
	VMOVUPS(m(xp, 0), xlo)
	VMOVUPS(m(xp, 64), xhi)
	for r := 0; r < 8; r++ {
		PREFETCHT0(pfMem(r))
		VCVTPH2PS(rowMem(r, 0), t0)
		VCVTPH2PS(rowMem(r, 32), t1)
		VFMADD231PS(xlo, t0, zmm(2*r))
		VFMADD231PS(xhi, t1, zmm(2*r+1))
	}
	ADDQ(U8(64), b0)
	ADDQ(U8(64), b4)
	ADDQ(U8(64), pfA)
	ADDQ(U8(64), pfB)
	ADDQ(U32(128), xp)
	DECQ(cnt)
	JNZ(LabelRef(label(fn, "chunk")))

	Label(label(fn, "part"))
	remArg, _ := Param("rem").Resolve()
	CMPQ(remArg.Addr, U8(0))
	JEQ(LabelRef(label(fn, "reduce")))
	Load(Param("tail"), xp)
	VMOVUPS(m(xp, 0), xlo)
	VMOVUPS(m(xp, 64), xhi)
	for r := 0; r < 8; r++ {
		VCVTPH2PS_Z(rowMem(r, 0), K1, t0)
		VCVTPH2PS_Z(rowMem(r, 32), K2, t1)
		VFMADD231PS(xlo, t0, K1, zmm(2*r))
		VFMADD231PS(xhi, t1, K2, zmm(2*r+1))
	}

	Label(label(fn, "reduce"))
	// [a0+a2 | a1+a3] of row r in Z(2r).
	for r := 0; r < 8; r++ {
		VADDPS(zmm(2*r+1), zmm(2*r), zmm(2*r))
	}
	u, v := Z18, Z19
	// x = the two halves added: rows 2p, 2p+1 in Z(4p) as [x | x'].
	for p := 0; p < 4; p++ {
		a, b := zmm(4*p), zmm(4*p+2)
		VSHUFF64X2(U8(0x44), b, a, u)
		VSHUFF64X2(U8(0xee), b, a, v)
		VADDPS(v, u, a)
	}
	// t0 = x's 128-bit halves added: rows 4q..4q+3, one per 128-bit
	// lane, in Z(8q).
	for q := 0; q < 2; q++ {
		a, b := zmm(8*q), zmm(8*q+4)
		VSHUFF32X4(U8(0x88), b, a, u)
		VSHUFF32X4(U8(0xdd), b, a, v)
		VADDPS(v, u, a)
	}
	// Two horizontal adds: lane l ends as [row l, row 4+l, ...].
	VSHUFPS(U8(0x88), Z8, Z0, u)
	VSHUFPS(U8(0xdd), Z8, Z0, v)
	VADDPS(v, u, Z0)
	VSHUFPS(U8(0x88), Z0, Z0, u)
	VSHUFPS(U8(0xdd), Z0, Z0, v)
	VADDPS(v, u, Z0)
	VMOVUPS(perm, Y1) // the upper lanes of the index zeroed
	VPERMPS(Z0, Z1, Z0)
	VMOVUPS(Y0, m(out, 0))

	ADDQ(U8(32), out)
	LEAQ(mi(w, 0, rowBytes, 8), w)
	DECQ(blocks)
	JNZ(LabelRef(label(fn, "block")))
	VZEROUPPER()
	RET()
}
