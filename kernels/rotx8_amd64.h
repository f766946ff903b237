// The inner step of the AVX-512 kernels that multiply 8 rows of QSF's
// rotated types at once, in quant's order (see rot.dot): the x8 layouts'
// kernels and the file layout's 8-row kernels, which rearrange the codes
// of 8 row streams into the same register form (rotx8_avx512_amd64.s);
// the file layout's single-row kernels (qsfrot_avx512_amd64.s) share its
// tables. Lane 2r+h (dword) of a 512-bit register is row r
// and half h of the block; unit u (u = 0..7) is the four elements
// 32h+4u..32h+4u+3 of each lane, units 0..3 in sub-block 2h, 4..7 in 2h+1.
//
// Registers: R12 the activation in prepRotX8's form (88 bytes a block),
// Z13 the code table (T+128, repeating so that the bits above a code do
// not matter), Z14 the lane duplication (lane 2r+h ← r), Z15 the int32
// multipliers 1..16, Z16 the float32 accumulators (acc_h of row r in lane
// 2r+h), Z17 and Z18 the int32 sums of sub-blocks 2h and 2h+1, Z24 d·da_h,
// Z25 and Z26 the int32 multipliers of sub-blocks 2h and 2h+1.

// rotX8Tab2, rotX8Tab3 and rotX8Tab4 are the code tables T+128 of
// QSF_Q2R, QSF_Q3R and QSF_Q4R, repeated to 64 bytes (VPERMB's table);
// they and rotX8Mul are file-local, so each file that includes this
// header has its copy.
DATA rotX8Tab2<>+0(SB)/8, $0xffa65a01ffa65a01
DATA rotX8Tab2<>+8(SB)/8, $0xffa65a01ffa65a01
DATA rotX8Tab2<>+16(SB)/8, $0xffa65a01ffa65a01
DATA rotX8Tab2<>+24(SB)/8, $0xffa65a01ffa65a01
DATA rotX8Tab2<>+32(SB)/8, $0xffa65a01ffa65a01
DATA rotX8Tab2<>+40(SB)/8, $0xffa65a01ffa65a01
DATA rotX8Tab2<>+48(SB)/8, $0xffa65a01ffa65a01
DATA rotX8Tab2<>+56(SB)/8, $0xffa65a01ffa65a01
GLOBL rotX8Tab2<>(SB), RODATA|NOPTR, $64

DATA rotX8Tab3<>+0(SB)/8, $0xffcfad8e72533101
DATA rotX8Tab3<>+8(SB)/8, $0xffcfad8e72533101
DATA rotX8Tab3<>+16(SB)/8, $0xffcfad8e72533101
DATA rotX8Tab3<>+24(SB)/8, $0xffcfad8e72533101
DATA rotX8Tab3<>+32(SB)/8, $0xffcfad8e72533101
DATA rotX8Tab3<>+40(SB)/8, $0xffcfad8e72533101
DATA rotX8Tab3<>+48(SB)/8, $0xffcfad8e72533101
DATA rotX8Tab3<>+56(SB)/8, $0xffcfad8e72533101
GLOBL rotX8Tab3<>(SB), RODATA|NOPTR, $64

DATA rotX8Tab4<>+0(SB)/8, $0x7a6e615446352001
DATA rotX8Tab4<>+8(SB)/8, $0xffe0cbbaac9f9286
DATA rotX8Tab4<>+16(SB)/8, $0x7a6e615446352001
DATA rotX8Tab4<>+24(SB)/8, $0xffe0cbbaac9f9286
DATA rotX8Tab4<>+32(SB)/8, $0x7a6e615446352001
DATA rotX8Tab4<>+40(SB)/8, $0xffe0cbbaac9f9286
DATA rotX8Tab4<>+48(SB)/8, $0x7a6e615446352001
DATA rotX8Tab4<>+56(SB)/8, $0xffe0cbbaac9f9286
GLOBL rotX8Tab4<>(SB), RODATA|NOPTR, $64

// rotX8Mul is the int32 multipliers 1..16 (VPERMD's table).
DATA rotX8Mul<>+0(SB)/8, $0x0000000200000001
DATA rotX8Mul<>+8(SB)/8, $0x0000000400000003
DATA rotX8Mul<>+16(SB)/8, $0x0000000600000005
DATA rotX8Mul<>+24(SB)/8, $0x0000000800000007
DATA rotX8Mul<>+32(SB)/8, $0x0000000a00000009
DATA rotX8Mul<>+40(SB)/8, $0x0000000c0000000b
DATA rotX8Mul<>+48(SB)/8, $0x0000000e0000000d
DATA rotX8Mul<>+56(SB)/8, $0x000000100000000f
GLOBL rotX8Mul<>(SB), RODATA|NOPTR, $64

// X8_CONSTS loads Z13 (tab, the code table), Z14 and Z15.
#define X8_CONSTS(tab) \
	VMOVDQU64 tab, Z13 \
	VMOVDQU64 rotX8Dup<>(SB), Z14 \
	VMOVDQU64 rotX8Mul<>(SB), Z15

// X8_SCALES sets Z24 = d·da_h from the eight rows' d as float32 in Z0
// (lane 2r+h has row r's), and Z25, Z26 the multipliers from Z1, which
// has the multiplier byte of lane 2r+h (sub-blocks 2h, 2h+1) in the low
// byte of that lane (the bits above bit 7 do not matter); it starts the
// integer sums Z17 and Z18 at prepRotX8's −128·Σq.
#define X8_SCALES \
	VBROADCASTSD 80(R12), Z2 \
	VMULPS Z2, Z0, Z24 \
	VPERMD Z15, Z1, Z25 \
	VPSRLD $4, Z1, Z1 \
	VPERMD Z15, Z1, Z26 \
	VPBROADCASTQ 64(R12), Z17 \
	VPBROADCASTQ 72(R12), Z18

// X8_DP adds unit u, whose table values T+128 are in zu, to sum (Z17 for
// units 0..3, Z18 for 4..7): Σ(T+128)·q over each lane's four elements.
#define X8_DP(u, zu, sum) \
	VPBROADCASTQ (8*u)(R12), Z8 \
	VPDPBUSD Z8, zu, sum

// X8_FINISH takes the block's float step: Iₕ = m₂ₕ·S₂ₕ + m₂ₕ₊₁·S₂ₕ₊₁,
// acc_h += (d·da_h)·float(Iₕ).
#define X8_FINISH \
	VPMULLD Z25, Z17, Z17 \
	VPMULLD Z26, Z18, Z18 \
	VPADDD Z18, Z17, Z17 \
	VCVTDQ2PS Z17, Z17 \
	VMULPS Z24, Z17, Z17 \
	VADDPS Z17, Z16, Z16

// X8_STORE stores acc₀+acc₁ of the eight rows at (R8).
#define X8_STORE \
	VMOVSHDUP Z16, Z0 \
	VADDPS Z0, Z16, Z16 \
	VPMOVQD Z16, Y16 \
	VMOVUPS Y16, (R8)

// X8_UNITS_Q2 adds the eight units of a 2-bit block whose codes are, for
// units u and u+4 (u = 0..3), bits 2u, 2u+1 of the bytes of zlo and zhi.
#define X8_UNITS_Q2(zlo, zhi) \
	VPERMB Z13, zlo, Z3 \
	X8_DP(0, Z3, Z17) \
	VPSRLW $2, zlo, Z7 \
	VPERMB Z13, Z7, Z3 \
	X8_DP(1, Z3, Z17) \
	VPSRLW $4, zlo, Z7 \
	VPERMB Z13, Z7, Z3 \
	X8_DP(2, Z3, Z17) \
	VPSRLW $6, zlo, Z7 \
	VPERMB Z13, Z7, Z3 \
	X8_DP(3, Z3, Z17) \
	VPERMB Z13, zhi, Z3 \
	X8_DP(4, Z3, Z18) \
	VPSRLW $2, zhi, Z7 \
	VPERMB Z13, Z7, Z3 \
	X8_DP(5, Z3, Z18) \
	VPSRLW $4, zhi, Z7 \
	VPERMB Z13, Z7, Z3 \
	X8_DP(6, Z3, Z18) \
	VPSRLW $6, zhi, Z7 \
	VPERMB Z13, Z7, Z3 \
	X8_DP(7, Z3, Z18)
