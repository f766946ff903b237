package format

import (
	"fmt"
	"strings"
)

// QSFError is an error found in a QSF file. It names the section ("header",
// "arch", "tokenizer", "metadata", "index", "embedding", "layer" or
// "final"), the layer for layer errors, and the file offset, and wraps one
// of ErrBadMagic, ErrVersion, ErrTruncated, ErrCorrupt, ErrChecksum or
// ErrUnknownType for errors.Is.
type QSFError struct {
	Kind    error
	Section string
	Layer   int // -1 unless Section is "layer"
	Offset  int64
	Msg     string
}

// Error describes what is wrong and where: section, layer and offset.
func (e *QSFError) Error() string {
	var b strings.Builder
	b.WriteString("qsf: ")
	switch e.Kind {
	case ErrBadMagic:
		b.WriteString("bad magic")
	case ErrVersion:
		b.WriteString("unsupported version")
	case ErrTruncated:
		b.WriteString("truncated file")
	case ErrChecksum:
		b.WriteString("checksum mismatch")
	case ErrUnknownType:
		b.WriteString("unknown tensor type")
	default:
		b.WriteString("corrupt file")
	}
	if e.Section != "" {
		b.WriteString(": ")
		b.WriteString(e.Section)
		if e.Section == "layer" {
			fmt.Fprintf(&b, " %d", e.Layer)
		}
	}
	fmt.Fprintf(&b, " (offset %d): %s", e.Offset, e.Msg)
	return b.String()
}

// Unwrap returns the sentinel kind.
func (e *QSFError) Unwrap() error { return e.Kind }

func qsfErr(kind error, section string, layer int, off uint64, format string, args ...any) error {
	return &QSFError{Kind: kind, Section: section, Layer: layer, Offset: int64(min(off, 1<<62)), Msg: fmt.Sprintf(format, args...)}
}
