package tokenizer

import (
	"bufio"
	"io"
)

func bufioReader(r io.Reader) io.Reader { return bufio.NewReaderSize(r, 1<<16) }
