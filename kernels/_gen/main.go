// Command _gen writes the generated assembly of package kernels, one
// file per run:
//
//	cd kernels/_gen && go run . -file kquant -out ../kquant_avx512_amd64.s -stubs ../kquant_avx512_stubs_amd64.go -pkg kernels
//
// (go generate in package kernels runs it for every file). It is a module
// of its own so that avo is no dependency of the library.
package main

import (
	"flag"
	"log"

	. "github.com/mmcloughlin/avo/build"
)

// files are the generated files' kernels, by the -file name.
var files = map[string]func(){
	"kquant": func() {
		dIdx, mIdx, q6Shuf, k4Pair := kquantData()
		q4KRows2(dIdx, mIdx)
		q6KRows2(q6Shuf)
		q4KT8(k4Pair)
		scaleLo, gather := q6ScaleLo(), t4Gather()
		q6KTile(scaleLo, 4)
		for n := 2; n <= 4; n++ {
			q6KTR2(scaleLo, gather, n)
		}
	},
	"q40x8": func() {
		q40x8Rows()
		for _, gfni := range []bool{false, true} {
			for t := 2; t <= 8; t++ {
				q40x8Tn(t, gfni)
			}
		}
		for _, gfni := range []bool{false, true} {
			for t := 1; t <= 8; t++ {
				q40x16Tn(t, gfni)
			}
		}
	},
	"float": func() {
		f32Rows()
		f32R3T8()
		f16Rows8()
	},
	"quant": quantQ8K,
}

func main() {
	file := flag.String("file", "", "which file's kernels to write: kquant, q40x8, float or quant")
	flag.Parse()
	gen, ok := files[*file]
	if !ok {
		log.Fatalf("unknown -file %q", *file)
	}
	ConstraintExpr("amd64,!purego")
	gen()
	Generate()
}
