package format

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Errors returned by ReadGGUF and Open wrap one of them (a
// few wrap both ErrTruncated and ErrCorrupt) and can be tested with
// errors.Is.
var (
	// ErrBadMagic means the input does not start with "GGUF".
	ErrBadMagic = errors.New("gguf: bad magic")
	// ErrVersion means an unsupported GGUF version (only 2 and 3 are read)
	// or a big-endian file.
	ErrVersion = errors.New("gguf: unsupported version")
	// ErrTruncated means the input ends before the data it declares. A
	// length or count larger than the rest of the file is reported as both
	// ErrTruncated and ErrCorrupt, since the two cannot be told apart.
	ErrTruncated = errors.New("gguf: truncated file")
	// ErrCorrupt means an impossible header: absurd counts, lengths or
	// shapes, duplicate keys or tensor names, a bad alignment, or tensor
	// data that is misaligned or overlaps another tensor.
	ErrCorrupt = errors.New("gguf: corrupt file")
	// ErrUnknownType means a tensor type that package quant does not know.
	ErrUnknownType = errors.New("gguf: unknown tensor type")
	// ErrChecksum means a QSF section or layer whose CRC does not match
	// its bytes; the error names the section (and layer).
	ErrChecksum = errors.New("qsf: checksum mismatch")
)

// formatError is a parse error: one or two sentinel kinds, the file offset
// where it was detected, the part of the file being read and a message.
type formatError struct {
	kinds []error
	off   int64
	where string
	msg   string
}

func (e *formatError) Error() string {
	var b strings.Builder
	if len(e.kinds) == 2 && e.kinds[0] == ErrTruncated && e.kinds[1] == ErrCorrupt {
		b.WriteString("gguf: truncated or corrupt file")
	} else {
		b.WriteString(e.kinds[0].Error())
	}
	if e.where != "" {
		b.WriteString(": ")
		b.WriteString(e.where)
	}
	fmt.Fprintf(&b, " (offset %d): %s", e.off, e.msg)
	return b.String()
}

func (e *formatError) Unwrap() []error { return e.kinds }

var truncatedOrCorrupt = []error{ErrTruncated, ErrCorrupt}
