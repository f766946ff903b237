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
