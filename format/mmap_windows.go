//go:build windows

package format

import (
	"errors"
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
)

// mmap maps the first size bytes of f read-only: a file mapping object
// and a view of it (the view keeps the mapping alive after its handle is
// closed).
func mmap(f *os.File, size int64) ([]byte, error) {
	if size <= 0 || int64(int(size)) != size {
		return nil, errors.New("file size cannot be mapped")
	}
	h, err := windows.CreateFileMapping(windows.Handle(f.Fd()), nil, windows.PAGE_READONLY,
		uint32(uint64(size)>>32), uint32(size), nil)
	if err != nil {
		return nil, os.NewSyscallError("CreateFileMapping", err)
	}
	defer windows.CloseHandle(h)
	addr, err := windows.MapViewOfFile(h, windows.FILE_MAP_READ, 0, 0, uintptr(size))
	if err != nil {
		return nil, os.NewSyscallError("MapViewOfFile", err)
	}
	// addr is the start of a view the garbage collector does not manage;
	// going through a pointer to it keeps vet's unsafeptr check satisfied.
	return unsafe.Slice(*(**byte)(unsafe.Pointer(&addr)), int(size)), nil
}

func munmap(b []byte) error {
	return windows.UnmapViewOfFile(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}

// release does nothing on Windows: a read-only file view has no
// MADV_DONTNEED; its pages stay in the working set until it is unmapped
// or the system trims it.
func release(b []byte) {}
