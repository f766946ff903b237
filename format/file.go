package format

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"unsafe"
)

// OpenOptions adjusts how OpenWith opens a file.
type OpenOptions struct {
	// NoMmap reads tensor data with pread-style ReadAt calls instead of
	// memory-mapping the file.
	NoMmap bool
	// DeferLayerCRC skips the CRC check of QSF layers when their data is
	// first read; QSF.VerifyLayer still checks them.
	DeferLayerCRC bool
}

// File is an opened GGUF or QSF file: its parsed header (for QSF, the GGUF
// view of docs/FORMAT.md) plus access to the tensor data. By default the file is memory-mapped read-only; where mapping is
// unavailable or fails (or OpenOptions.NoMmap is set) it is read with
// ReadAt instead.
//
// TensorData and ReadAt may be called concurrently; Close must not be
// called while they run.
type File struct {
	*GGUF

	name   string
	f      *os.File // nil when mapped
	data   []byte   // read-only mapping of the whole file, nil when not mapped
	size   int64
	closed bool

	qsf  *QSF        // non-nil for a QSF file
	locs []tensorLoc // where the QSF tensors' data lies, parallel to Tensors
}

// Open opens and parses the GGUF or QSF file at path (the magic decides),
// memory-mapping it where possible. A QSF file is presented with GGUF
// metadata keys and tensor names; see docs/FORMAT.md.
func Open(path string) (*File, error) { return OpenWith(path, OpenOptions{}) }

// OpenWith is Open with options.
func OpenWith(path string, opts OpenOptions) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	size := st.Size()
	var data []byte
	if !opts.NoMmap && size > 0 && st.Mode().IsRegular() {
		data, err = mmap(f, size)
		if err != nil {
			data = nil // fall back to ReadAt
		}
	}
	var r io.ReaderAt = f
	if data != nil {
		r = bytes.NewReader(data)
	}
	var g *GGUF
	var q *QSF
	var locs []tensorLoc
	if isQSF(r) {
		if q, err = readQSF(r, uint64(size), data, opts.DeferLayerCRC); err == nil {
			g, locs, err = q.view()
		}
	} else {
		g, err = ReadGGUF(r, size)
	}
	if err != nil {
		if data != nil {
			munmap(data)
		}
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	file := &File{GGUF: g, name: path, f: f, data: data, size: size, qsf: q, locs: locs}
	if q != nil {
		q.owner = file
	}
	if data != nil {
		// The mapping outlives the descriptor.
		f.Close()
		file.f = nil
	}
	return file, nil
}

// Map memory-maps a file opened with OpenOptions.NoMmap, as OpenWith
// would have, so that TensorData hands out slices of the mapping from then
// on: a caller can read a file's metadata before it decides whether to map
// it. Call it before any tensor data is read. It does nothing when the
// file is mapped already; when the file cannot be mapped it returns the
// error and the file stays readable with ReadAt.
func (f *File) Map() error {
	if f.data != nil {
		return nil
	}
	if f.closed {
		return os.ErrClosed
	}
	if f.size == 0 {
		return errors.New("gguf: an empty file cannot be mapped")
	}
	data, err := mmap(f.f, f.size)
	if err != nil {
		return err
	}
	f.data = data
	if f.qsf != nil {
		f.qsf.r, f.qsf.data = bytes.NewReader(data), data
	}
	// The mapping outlives the descriptor.
	err = f.f.Close()
	f.f = nil
	return err
}

// IsMapped reports whether b lies in the file's memory mapping, as the
// tensor data TensorData returns for a mapped file does. Such bytes are
// read-only: writing them faults.
func (f *File) IsMapped(b []byte) bool {
	if len(f.data) == 0 || len(b) == 0 {
		return false
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(f.data)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return p >= lo && p-lo <= uintptr(len(f.data)) && uintptr(len(b)) <= uintptr(len(f.data))-(p-lo)
}

// Release tells the operating system that the process no longer needs
// the mapped pages wholly inside b (madvise MADV_DONTNEED), for data a
// caller has copied elsewhere: they leave the process's resident set,
// though the page cache keeps them, and reading b again maps them back. It
// does nothing when b is not in the mapping (see IsMapped) or on systems
// without madvise.
func (f *File) Release(b []byte) {
	if f.IsMapped(b) && !f.closed {
		release(b)
	}
}

// Name returns the path the file was opened with.
func (f *File) Name() string { return f.name }

// Size returns the file size in bytes.
func (f *File) Size() int64 { return f.size }

// QSF returns the QSF structure of a QSF file (header, architecture
// config, layer index), or nil for a GGUF file.
func (f *File) QSF() *QSF { return f.qsf }

// Mapped reports whether the file is memory-mapped.
func (f *File) Mapped() bool { return f.data != nil }

// TensorData returns the bytes of tensor t, which must describe a range
// inside the file (as every tensor of f.Tensors does). When the file is
// mapped the slice points into the read-only mapping: it costs nothing,
// must not be written to, and must not be used after Close. Otherwise the
// data is read into a new slice.
func (f *File) TensorData(t *TensorInfo) ([]byte, error) {
	if f.closed {
		return nil, fmt.Errorf("gguf: tensor %q: %w", t.Name, os.ErrClosed)
	}
	if f.qsf != nil {
		i, ok := f.byName[t.Name]
		if !ok {
			return nil, fmt.Errorf("qsf: no tensor %q", t.Name)
		}
		return f.qsf.tensorData(t.Name, f.locs[i])
	}
	off := uint64(f.DataOffset) + t.Offset
	if t.Offset > uint64(f.size) || off > uint64(f.size) || t.Size > uint64(f.size)-off {
		return nil, fmt.Errorf("%w: tensor %q: data [%d, +%d) lies outside the %d-byte file", ErrCorrupt, t.Name, off, t.Size, f.size)
	}
	if f.data != nil {
		end := off + t.Size
		return f.data[off:end:end], nil
	}
	buf := make([]byte, t.Size)
	if _, err := f.f.ReadAt(buf, int64(off)); err != nil {
		return nil, fmt.Errorf("gguf: tensor %q: %w", t.Name, err)
	}
	return buf, nil
}

// ReadAt reads len(p) bytes at offset off of the file, as io.ReaderAt.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	if f.closed {
		return 0, os.ErrClosed
	}
	if f.data == nil {
		return f.f.ReadAt(p, off)
	}
	if off < 0 {
		return 0, fmt.Errorf("gguf: ReadAt: negative offset %d", off)
	}
	if off >= f.size {
		return 0, io.EOF
	}
	n := copy(p, f.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Close unmaps or closes the file. Slices returned by TensorData must not be
// used afterwards. Calling Close again does nothing.
func (f *File) Close() error {
	if f.closed {
		return nil
	}
	f.closed = true
	if f.data != nil {
		data := f.data
		f.data = nil
		return munmap(data)
	}
	return f.f.Close()
}
