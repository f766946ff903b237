package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Helpers shared by the generators: memory operands, instructions avo
// does not know, and the reductions in ggml's order.

// m is the memory operand disp(base).
func m(base Register, disp int) Mem { return Mem{Base: base, Disp: disp} }

// mi is the memory operand disp(base)(index*scale).
func mi(base Register, disp int, index Register, scale uint8) Mem {
	return Mem{Base: base, Disp: disp, Index: index, Scale: scale}
}

// global is the memory operand of the package symbol ·name at offset off.
func global(name string, off int) Mem { return NewDataAddr(Symbol{Name: "·" + name}, off) }

// local is the memory operand of the file's static symbol name<> at
// offset off.
func local(name string, off int) Mem { return NewDataAddr(NewStaticSymbol(name), off) }

// raw emits an instruction avo's database lacks (AVX-512 VNNI), operands
// in Go assembly order, the last one written.
func raw(op string, ops ...Op) {
	Instruction(&ir.Instruction{Opcode: op, Operands: ops, Inputs: ops, Outputs: ops[len(ops)-1:]})
}

// vpdpwssd is VPDPWSSD: dst += the sums of pairs of the int16 products
// of a and b.
func vpdpwssd(a, b, dst Op) { raw("VPDPWSSD", a, b, dst) }

// vpdpbusd is VPDPBUSD: dst += the sums of four products of the unsigned
// bytes of u and the signed bytes of s.
func vpdpbusd(s, u, dst Op) { raw("VPDPBUSD", s, u, dst) }

// u64s emits a data table of 64-bit words.
func u64s(name string, words ...uint64) Mem {
	g := GLOBL(name, RODATA|NOPTR)
	for i, w := range words {
		DATA(8*i, U64(w))
	}
	return g
}

// repeat returns n copies of w.
func repeat(n int, w ...uint64) []uint64 {
	var s []uint64
	for i := 0; i < n; i++ {
		s = append(s, w...)
	}
	return s
}

// hsum8 reduces the 8-lane accumulator y (x its low half) as
// hsum_float_8 does, into the low lane of x; t is clobbered.
func hsum8(y, x, t Op) {
	VEXTRACTF128(U8(1), y, t)
	VADDPS(t, x, x)
	VMOVHLPS(x, t, t)
	VADDPS(t, x, x)
	VMOVSHDUP(x, t)
	VADDSS(t, x, x)
}

// hsum4m reduces the 4-lane mins accumulator x of the K-quant kernels as
// ggml does ((m0+m2)+(m1+m3)) into its low lane; t is clobbered.
func hsum4m(x, t Op) {
	VMOVHLPS(x, t, t)
	VADDPS(t, x, x)
	VMOVSHDUP(x, t)
	VADDSS(t, x, x)
}

// k4scales unpacks the 6-bit scales and mins of the Q4_K block at ptr as
// ggml's kmask trick does: bytes 0..7 of s are the eight scales, of mn the
// eight mins; t1, t2, t3 are clobbered. The registers are the 64-bit
// ones; the work is on their 32-bit halves until the last shifts.
func k4scales(ptr, s, mn, t1, t2, t3 GPPhysical) {
	s32, m32, a, b, c := s.As32(), mn.As32(), t1.As32(), t2.As32(), t3.As32()
	MOVL(m(ptr, 4), s32)
	MOVL(m(ptr, 8), m32)
	MOVL(m(ptr, 12), a)
	MOVL(a, b)
	SHRL(U8(4), b)
	ANDL(U32(0x0f0f0f0f), b)
	MOVL(m32, c)
	SHRL(U8(6), c)
	ANDL(U32(0x03030303), c)
	SHLL(U8(4), c)
	ORL(c, b)
	ANDL(U32(0x3f3f3f3f), m32)
	ANDL(U32(0x0f0f0f0f), a)
	MOVL(s32, c)
	SHRL(U8(6), c)
	ANDL(U32(0x03030303), c)
	SHLL(U8(4), c)
	ORL(c, a)
	ANDL(U32(0x3f3f3f3f), s32)
	SHLQ(U8(32), t1)
	ORQ(t1, s)
	SHLQ(U8(32), t2)
	ORQ(t2, mn)
}

// label returns a function's label name with a suffix.
func label(fn, s string) string { return fmt.Sprintf("%s_%s", fn, s) }
