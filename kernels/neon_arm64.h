// The ARMv8 Advanced SIMD (NEON) instructions of the neon tiers that Go's
// arm64 assembler does not know, as WORD encodings. Arguments are register
// numbers (3 for V3) and, for the by-element forms, the lane index; each
// macro names the instruction and arrangement it emits. The encodings were
// checked against llvm-mc's disassembler.

#define NEON3(op, d, n, m) WORD $((op) | (m)<<16 | (n)<<5 | (d))
#define NEON2(op, d, n) WORD $((op) | (n)<<5 | (d))
#define NEONE(op, d, n, m, i) WORD $((op) | ((i)&1)<<21 | (m)<<16 | ((i)>>1)<<11 | (n)<<5 | (d))

// Integer.
#define SDOT4S(d, n, m) NEON3(0x4e809400, d, n, m)        // sdot vd.4s, vn.16b, vm.16b
#define SDOT4SE(d, n, m, i) NEONE(0x4f80e000, d, n, m, i) // sdot vd.4s, vn.16b, vm.4b[i]
#define SMULL8H(d, n, m) NEON3(0x0e20c000, d, n, m)       // smull vd.8h, vn.8b, vm.8b
#define SMULL28H(d, n, m) NEON3(0x4e20c000, d, n, m)      // smull2 vd.8h, vn.16b, vm.16b
#define SMLAL8H(d, n, m) NEON3(0x0e208000, d, n, m)       // smlal vd.8h, vn.8b, vm.8b
#define SMLAL28H(d, n, m) NEON3(0x4e208000, d, n, m)      // smlal2 vd.8h, vn.16b, vm.16b
#define SADDLP4S(d, n) NEON2(0x4e602800, d, n)            // saddlp vd.4s, vn.8h
#define SADALP4S(d, n) NEON2(0x4e606800, d, n)            // sadalp vd.4s, vn.8h
#define SADDLP8H(d, n) NEON2(0x4e202800, d, n)            // saddlp vd.8h, vn.16b
#define ADDP4S(d, n, m) NEON3(0x4ea0bc00, d, n, m)        // addp vd.4s, vn.4s, vm.4s
#define ADDP8H(d, n, m) NEON3(0x4e60bc00, d, n, m)        // addp vd.8h, vn.8h, vm.8h
#define ADD4S(d, n, m) NEON3(0x4ea08400, d, n, m)         // add vd.4s, vn.4s, vm.4s
#define SUB4S(d, n, m) NEON3(0x6ea08400, d, n, m)         // sub vd.4s, vn.4s, vm.4s
#define SUB16B(d, n, m) NEON3(0x6e208400, d, n, m)        // sub vd.16b, vn.16b, vm.16b
#define MUL4S(d, n, m) NEON3(0x4ea09c00, d, n, m)         // mul vd.4s, vn.4s, vm.4s
#define MLA4S(d, n, m) NEON3(0x4ea09400, d, n, m)         // mla vd.4s, vn.4s, vm.4s
#define MLA4SE(d, n, m, i) NEONE(0x6f800000, d, n, m, i)  // mla vd.4s, vn.4s, vm.s[i]
#define UXTL8H(d, n) NEON2(0x2f08a400, d, n)              // uxtl vd.8h, vn.8b
#define UXTL4S(d, n) NEON2(0x2f10a400, d, n)              // uxtl vd.4s, vn.4h
#define UXTL24S(d, n) NEON2(0x6f10a400, d, n)             // uxtl2 vd.4s, vn.8h
#define SCVTF4S(d, n) NEON2(0x4e21d800, d, n)             // scvtf vd.4s, vn.4s
#define SQXTN4H(d, n) NEON2(0x0e614800, d, n)             // sqxtn vd.4h, vn.4s
#define SQXTN28H(d, n) NEON2(0x4e614800, d, n)            // sqxtn2 vd.8h, vn.4s
#define SQXTN8B(d, n) NEON2(0x0e214800, d, n)             // sqxtn vd.8b, vn.8h
#define SQXTN216B(d, n) NEON2(0x4e214800, d, n)           // sqxtn2 vd.16b, vn.8h
#define SXTL8H(d, n) NEON2(0x0f08a400, d, n)              // sxtl vd.8h, vn.8b
#define SXTL28H(d, n) NEON2(0x4f08a400, d, n)             // sxtl2 vd.8h, vn.16b
#define SHL16B(d, n, s) NEON2(0x4f085400 | (s)<<16, d, n)  // shl vd.16b, vn.16b, #s
#define ORR16B(d, n, m) NEON3(0x4ea01c00, d, n, m)         // orr vd.16b, vn.16b, vm.16b
#define SXTL4S(d, n) NEON2(0x0f10a400, d, n)               // sxtl vd.4s, vn.4h
#define SXTL24S(d, n) NEON2(0x4f10a400, d, n)              // sxtl2 vd.4s, vn.8h
#define USHR16B(d, n, s) NEON2(0x6f080400 | (8-(s))<<16, d, n) // ushr vd.16b, vn.16b, #s

// Floating point (float32 lanes).
#define FMLA4S(d, n, m) NEON3(0x4e20cc00, d, n, m)        // fmla vd.4s, vn.4s, vm.4s
#define FMLA4SE(d, n, m, i) NEONE(0x4f801000, d, n, m, i) // fmla vd.4s, vn.4s, vm.s[i]
#define FMLS4SE(d, n, m, i) NEONE(0x4f805000, d, n, m, i) // fmls vd.4s, vn.4s, vm.s[i]
#define FMUL4S(d, n, m) NEON3(0x6e20dc00, d, n, m)        // fmul vd.4s, vn.4s, vm.4s
#define FMUL4SE(d, n, m, i) NEONE(0x4f809000, d, n, m, i) // fmul vd.4s, vn.4s, vm.s[i]
#define FADD4S(d, n, m) NEON3(0x4e20d400, d, n, m)        // fadd vd.4s, vn.4s, vm.4s
#define FADD2S(d, n, m) NEON3(0x0e20d400, d, n, m)        // fadd vd.2s, vn.2s, vm.2s
#define FSUB4S(d, n, m) NEON3(0x4ea0d400, d, n, m)        // fsub vd.4s, vn.4s, vm.4s
#define FMAX4S(d, n, m) NEON3(0x4e20f400, d, n, m)        // fmax vd.4s, vn.4s, vm.4s
#define FADDPS(d, n) NEON2(0x7e30d800, d, n)              // faddp sd, vn.2s
#define FABS4S(d, n) NEON2(0x4ea0f800, d, n)              // fabs vd.4s, vn.4s
#define FMAXV4S(d, n) NEON2(0x6e30f800, d, n)             // fmaxv sd, vn.4s
#define FCVTNS4S(d, n) NEON2(0x4e21a800, d, n)            // fcvtns vd.4s, vn.4s
#define FCVTL4S(d, n) NEON2(0x0e217800, d, n)             // fcvtl vd.4s, vn.4h
#define FCVTL24S(d, n) NEON2(0x4e217800, d, n)            // fcvtl2 vd.4s, vn.8h
#define EXT16B(d, n, m, i) NEON3(0x6e000000 | (i)<<11, d, n, m) // ext vd.16b, vn.16b, vm.16b, #i
#define MOVI0(d) NEON2(0x6f00e400, d, 0)                         // movi vd.2d, #0
#define AND16B(d, n, m) NEON3(0x4e201c00, d, n, m)               // and vd.16b, vn.16b, vm.16b
#define DUP4S(d, n, i) NEON2(0x4e040400 | (i)<<19, d, n)         // dup vd.4s, vn.s[i]
#define FACGT4S(d, n, m) NEON3(0x6ea0ec00, d, n, m)              // facgt vd.4s, vn.4s, vm.4s
#define ADDV4S(d, n) NEON2(0x4eb1b800, d, n)                     // addv sd, vn.4s
#define BIF16B(d, n, m) NEON3(0x6ee01c00, d, n, m)               // bif vd.16b, vn.16b, vm.16b

// Shared steps of the kernels.

// IDOT_SDOT and IDOT_NEON set the four int32 lanes of Vs to the sums of
// four int8 products each, lane l = Σ_{t<4} w[4l+t]·a[4l+t], as ggml's
// AVX2 lanes sum them (integer sums: exact in any order). IDOT_SDOT uses
// the dot-product extension; IDOT_NEON widens the products to int16 and
// adds neighbouring pairs twice (t0, t1 are scratch).
#define IDOT_SDOT(s, w, a, t0, t1) \
	MOVI0(s) \
	SDOT4S(s, w, a)

#define IDOT_NEON(s, w, a, t0, t1) \
	SMULL8H(t0, w, a) \
	SMULL28H(t1, w, a) \
	SADDLP4S(t0, t0) \
	SADDLP4S(t1, t1) \
	ADDP4S(s, t0, t1)

// HSUM8 leaves in lane 0 of Vlo ggml's hsum_float_8 of the eight float32
// lanes lo (0-3) and hi (4-7): the upper half added to the lower, then
// lanes (0+2) and (1+3), then those two. t is scratch.
#define HSUM8(lo, hi, t) \
	FADD4S(lo, lo, hi) \
	EXT16B(t, lo, lo, 8) \
	FADD2S(lo, lo, t) \
	FADDPS(lo, lo)

// ISUM_SDOT and ISUM_NEON set Vs to four int32 lanes that add up to
// Σ a·x + Σ b·y over the 16 int8 elements of each (t is scratch). In
// ISUM_NEON the int16 lanes each take four products, so every |product|
// must stay below 8192 (unsigned nibbles times int8 quants do).
#define ISUM_SDOT(s, a, x, b, y, t) \
	MOVI0(s) \
	SDOT4S(s, a, x) \
	SDOT4S(s, b, y)

#define ISUM_NEON(s, a, x, b, y, t) \
	SMULL8H(t, a, x) \
	SMLAL28H(t, a, x) \
	SMLAL8H(t, b, y) \
	SMLAL28H(t, b, y) \
	SADDLP4S(s, t)
#define NEG4S(d, n) NEON2(0x6ea0b800, d, n)                      // neg vd.4s, vn.4s
#define MOV16B(d, n) NEON3(0x4ea01c00, d, n, n)                  // mov vd.16b, vn.16b (orr)
#define FADDP4S(d, n, m) NEON3(0x6e20d400, d, n, m)              // faddp vd.4s, vn.4s, vm.4s
#define SHLL4S(d, n) NEON2(0x2e613800, d, n)                     // shll vd.4s, vn.4h, #16
#define SHLL24S(d, n) NEON2(0x6e613800, d, n)                    // shll2 vd.4s, vn.8h, #16

// REDUCE32R is the reduction of ggml_vec_dot_f32 (quant's reduce32,
// GGML_F32x8_REDUCE) of the 32 float32 lanes in Va0..Va7 (each a register
// number), into lane 0 of Va0.
#define REDUCE32R(a0, a1, a2, a3, a4, a5, a6, a7) \
	FADD4S(a0, a0, a4) \
	FADD4S(a2, a2, a6) \
	FADD4S(a0, a0, a2) \
	FADD4S(a1, a1, a5) \
	FADD4S(a3, a3, a7) \
	FADD4S(a1, a1, a3) \
	FADD4S(a0, a0, a1) \
	FADDP4S(a0, a0, a0) \
	FADDPS(a0, a0)
#define TBL16B(d, n, m) NEON3(0x4e000000, d, n, m)               // tbl vd.16b, {vn.16b}, vm.16b
#define CMTST16B(d, n, m) NEON3(0x4e208c00, d, n, m)             // cmtst vd.16b, vn.16b, vm.16b
#define BIC16B(d, n, m) NEON3(0x4e601c00, d, n, m)               // bic vd.16b, vn.16b, vm.16b
#define ADD16B(d, n, m) NEON3(0x4e208400, d, n, m)               // add vd.16b, vn.16b, vm.16b
#define SMULL4S(d, n, m) NEON3(0x0e60c000, d, n, m)              // smull vd.4s, vn.4h, vm.4h
#define SMULL24S(d, n, m) NEON3(0x4e60c000, d, n, m)             // smull2 vd.4s, vn.8h, vm.8h
#define UXTL28H(d, n) NEON2(0x6f08a400, d, n)                    // uxtl2 vd.8h, vn.16b
#define UHADD16B(d, n, m) NEON3(0x6e200400, d, n, m)             // uhadd vd.16b, vn.16b, vm.16b
#define MUL16B(d, n, m) NEON3(0x4e209c00, d, n, m)               // mul vd.16b, vn.16b, vm.16b
#define FCMEQ4S(d, n, m) NEON3(0x4e20e400, d, n, m)              // fcmeq vd.4s, vn.4s, vm.4s
#define SADDLV16B(d, n) NEON2(0x4e303800, d, n)                  // saddlv hd, vn.16b
#define UMAXV4S(d, n) NEON2(0x6eb0a800, d, n)                    // umaxv sd, vn.4s
#define SHL4S(d, n, s) NEON2(0x4f205400 | (s)<<16, d, n)         // shl vd.4s, vn.4s, #s
#define FCMGT4S(d, n, m) NEON3(0x6ea0e400, d, n, m)              // fcmgt vd.4s, vn.4s, vm.4s
#define FCMLEZ4S(d, n) NEON2(0x6ea0d800, d, n)                   // fcmle vd.4s, vn.4s, #0.0
#define FDIV4S(d, n, m) NEON3(0x6e20fc00, d, n, m)               // fdiv vd.4s, vn.4s, vm.4s
#define BIT16B(d, n, m) NEON3(0x6ea01c00, d, n, m)               // bit vd.16b, vn.16b, vm.16b
#define FMLS4S(d, n, m) NEON3(0x4ea0cc00, d, n, m)               // fmls vd.4s, vn.4s, vm.4s
#define FCVTN4H(d, n) NEON2(0x0e216800, d, n)                    // fcvtn vd.4h, vn.4s
#define FCVTN28H(d, n) NEON2(0x4e216800, d, n)                   // fcvtn2 vd.8h, vn.4s
#define MUL4SE(d, n, m, i) NEONE(0x4f808000, d, n, m, i)         // mul vd.4s, vn.4s, vm.s[i]
#define USHL4S(d, n, m) NEON3(0x6ea04400, d, n, m)               // ushl vd.4s, vn.4s, vm.4s
