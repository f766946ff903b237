// Shared by the amd64 assembly kernels (#include "hsum_amd64.h").

// HSUM4 reduces the accumulators Y0..Y3 of four rows as hsum_float_8
// each, four at once: lanes i and i+4, then (0+2) + (1+3) of what is
// left, as ggml adds them. The four sums end in X5, in row order; X0..X7
// are clobbered.
#define HSUM4 \
	VEXTRACTF128 $1, Y0, X4 \
	VADDPS X4, X0, X0 \
	VEXTRACTF128 $1, Y1, X5 \
	VADDPS X5, X1, X1 \
	VEXTRACTF128 $1, Y2, X6 \
	VADDPS X6, X2, X2 \
	VEXTRACTF128 $1, Y3, X7 \
	VADDPS X7, X3, X3 \
	VUNPCKLPS X1, X0, X4 \
	VUNPCKHPS X1, X0, X5 \
	VADDPS X5, X4, X4 \
	VUNPCKLPS X3, X2, X6 \
	VUNPCKHPS X3, X2, X7 \
	VADDPS X7, X6, X6 \
	VMOVLHPS X6, X4, X5 \
	VMOVHLPS X4, X6, X7 \
	VADDPS X7, X5, X5

// F32SUM sets y to (a0+a2)+(a1+a3) of slot off of the four passes at
// (DI), P bytes apart, with t for a temporary.
#define F32SUM(off, P, y, t) \
	VMOVUPS off(DI), y \
	VADDPS (off+2*P)(DI), y, y \
	VMOVUPS (off+P)(DI), t \
	VADDPS (off+3*P)(DI), t, t \
	VADDPS t, y, y

// F32QUAD reduces four slots x, y, z, w of the four passes at (DI), P
// bytes apart, each as ggml reduces its four accumulators: the halves of x and y are added in one
// 8-lane add, those of z and w in another, and two horizontal adds of
// both 128-bit lanes finish the four. The sums of x and z end in lanes 0
// and 1 of Y4, those of y and w in lanes 4 and 5.
#define F32QUAD(P, x, y, z, w) \
	F32SUM(x, P, Y0, Y5) \
	F32SUM(y, P, Y1, Y6) \
	F32SUM(z, P, Y2, Y7) \
	F32SUM(w, P, Y3, Y8) \
	VPERM2F128 $0x20, Y1, Y0, Y4 \
	VPERM2F128 $0x31, Y1, Y0, Y5 \
	VADDPS Y5, Y4, Y4 \
	VPERM2F128 $0x20, Y3, Y2, Y6 \
	VPERM2F128 $0x31, Y3, Y2, Y7 \
	VADDPS Y7, Y6, Y6 \
	VHADDPS Y6, Y4, Y4 \
	VHADDPS Y4, Y4, Y4

// F32R3FINISH stores the sums of a block of three rows (twelve slots of
// four passes at (DI), 384 bytes apart; slot t·3+r is row r, activation
// t) at (R8), activation t at t·R14 bytes. BX is clobbered.
#define F32R3FINISH \
	LEAQ  (R14)(R14*2), BX \
	F32QUAD(384, 0, 96, 32, 128) \
	VMOVSD       X4, 0(R8) \
	VEXTRACTF128 $1, Y4, X5 \
	VMOVSD       X5, 0(R8)(R14*1) \
	F32QUAD(384, 192, 288, 224, 320) \
	VMOVSD       X4, 0(R8)(R14*2) \
	VEXTRACTF128 $1, Y4, X5 \
	VMOVSD       X5, 0(R8)(BX*1) \
	F32QUAD(384, 64, 256, 160, 352) \
	VMOVSS       X4, 8(R8) \
	VEXTRACTPS   $1, X4, 8(R8)(R14*1) \
	VEXTRACTF128 $1, Y4, X5 \
	VMOVSS       X5, 8(R8)(R14*2) \
	VEXTRACTPS   $1, X5, 8(R8)(BX*1)

// F32R2FINISH is F32R3FINISH for a block of two rows (eight slots, 256
// bytes apart, slot t·2+r).
#define F32R2FINISH \
	LEAQ  (R14)(R14*2), BX \
	F32QUAD(256, 0, 64, 32, 96) \
	VMOVSD       X4, 0(R8) \
	VEXTRACTF128 $1, Y4, X5 \
	VMOVSD       X5, 0(R8)(R14*1) \
	F32QUAD(256, 128, 192, 160, 224) \
	VMOVSD       X4, 0(R8)(R14*2) \
	VEXTRACTF128 $1, Y4, X5 \
	VMOVSD       X5, 0(R8)(BX*1)
