package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/qsf-llm/qsf/format"
)

// errVerify reports that qsf verify found a damaged part.
var errVerify = errors.New("verification failed")

func cmdVerify(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("verify", "FILE", stderr)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want one file")
	}
	f, err := format.OpenWith(pos[0], format.OpenOptions{DeferLayerCRC: true})
	if err != nil {
		fmt.Fprintf(stdout, "FAIL  %v\n", err)
		return errVerify
	}
	defer f.Close()
	q := f.QSF()
	if q == nil {
		return fmt.Errorf("%s is not a QSF file (GGUF files carry no checksums)", pos[0])
	}
	for _, s := range q.Sections() {
		fmt.Fprintf(stdout, "ok    %-10s offset %10d  %10d bytes  crc %08x\n", s.Name, s.Offset, s.Length, s.CRC)
	}
	failed := 0
	for i, e := range q.Layers {
		if err := q.VerifyLayer(i); err != nil {
			fmt.Fprintf(stdout, "FAIL  layer %-4d %v\n", i, err)
			failed++
			continue
		}
		fmt.Fprintf(stdout, "ok    layer %-4d offset %10d  %10d bytes  crc %08x\n", i, e.Offset, e.StoredSize, e.CRC)
	}
	if failed > 0 {
		return fmt.Errorf("%w: %d of %d layers damaged", errVerify, failed, len(q.Layers))
	}
	fmt.Fprintf(stdout, "%s: all %d sections and %d layers verified\n", pos[0], len(q.Sections()), len(q.Layers))
	return nil
}
