module github.com/qsf-llm/qsf

go 1.26.0

require (
	github.com/klauspost/cpuid/v2 v2.4.2
	github.com/pierrec/lz4/v4 v4.1.33
	github.com/x448/float16 v0.8.4
	golang.org/x/sys v0.49.0
)
