//go:build !unix

package arena

// reserve allocates size bytes on the Go heap, aligned to Align.
func reserve(size int) ([]byte, func([]byte) error, error) {
	b := make([]byte, size+Align)
	return b[:size:size], nil, nil
}
