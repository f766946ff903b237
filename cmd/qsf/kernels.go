package main

import (
	"fmt"
	"io"

	"github.com/qsf-llm/qsf/kernels"
)

func cmdKernels(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("kernels", "", stderr)
	if _, err := parse(fs, args); err != nil {
		return err
	}
	for _, name := range kernels.Tiers() {
		fmt.Fprintln(stdout, name)
	}
	return nil
}
