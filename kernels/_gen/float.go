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
// adds. Each row is one stream, prefetched ahead bytes ahead.
func f32Rows() {
	const fn = "f32z"
	TEXT("dotF32AVX512", NOSPLIT, "func(out *float32, rows int, w *byte, chunks, rowBytes int, act *byte, ahead int)")
	Pragma("noescape")
	Doc("dotF32AVX512 computes out[r] = dot(row r, act) of F32 rows, chunks of 32 columns each,",
		"in ggml_vec_dot_f32's order, prefetching ahead bytes ahead.")
	Load(Param("out"), R8)
	Load(Param("rows"), R9)
	Load(Param("w"), RSI)
	Load(Param("chunks"), R10)
	Load(Param("rowBytes"), R12)
	Load(Param("act"), R11)
	Load(Param("ahead"), R13)

	Label(label(fn, "row"))
	VPXORD(Z0, Z0, Z0)
	VPXORD(Z1, Z1, Z1)
	MOVQ(RSI, RBX)
	MOVQ(R11, RDI)
	MOVQ(R10, RCX)
	TESTQ(RCX, RCX)
	JZ(LabelRef(label(fn, "done")))

	Label(label(fn, "chunk"))
	PREFETCHT0(mi(RBX, 0, R13, 1))
	PREFETCHT0(mi(RBX, 64, R13, 1))
	VMOVUPS(m(RBX, 0), Z4)
	VMOVUPS(m(RBX, 64), Z5)
	VFMADD231PS(m(RDI, 0), Z4, Z0)
	VFMADD231PS(m(RDI, 64), Z5, Z1)
	ADDQ(U32(128), RBX)
	ADDQ(U32(128), RDI)
	DECQ(RCX)
	JNZ(LabelRef(label(fn, "chunk")))

	Label(label(fn, "done"))
	VADDPS(Z1, Z0, Z0) // [a0+a2 | a1+a3]
	VEXTRACTF64X4(U8(1), Z0, Y1)
	VADDPS(Y1, Y0, Y0)
	VEXTRACTF128(U8(1), Y0, X1)
	VADDPS(X1, X0, X0)
	VHADDPS(X0, X0, X0)
	VHADDPS(X0, X0, X0)
	VMOVSS(X0, m(R8, 0))
	ADDQ(U32(4), R8)
	ADDQ(R12, RSI)
	DECQ(R9)
	JNZ(LabelRef(label(fn, "row")))
	VZEROUPPER()
	RET()
}
