//go:build unix

package arena

import "golang.org/x/sys/unix"

// reserve maps size bytes of anonymous memory, outside the Go heap.
func reserve(size int) ([]byte, func([]byte) error, error) {
	if size == 0 {
		return []byte{}, nil, nil
	}
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, nil, err
	}
	return mem, unix.Munmap, nil
}
