// Command _gen writes the generated assembly of package kernels:
//
//	cd kernels/_gen && go run . -out ../kquant_avx512_amd64.s -stubs ../kquant_avx512_stubs_amd64.go -pkg kernels
//
// (go generate in package kernels runs it). It is a module of its own so
// that avo is no dependency of the library.
package main

import (
	. "github.com/mmcloughlin/avo/build"
)

func main() {
	ConstraintExpr("amd64,!purego")
	dIdx, mIdx, q6Shuf, k4Pair := kquantData()
	q4KRows2(dIdx, mIdx)
	q6KRows2(q6Shuf)
	q4KT8(k4Pair)
	q6KT8(q6Shuf)
	Generate()
}
