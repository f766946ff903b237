// Package atomicfile writes a file under a temporary name in its final
// folder and renames it into place only when it is complete, so an error or
// an interrupt never leaves a partial file under the final name.
package atomicfile

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// File is an output file being written. Write to it, then Commit to move
// it under its final name or Abort to remove it; Abort after Commit does
// nothing, so `defer f.Abort()` is the usual cleanup.
type File struct {
	ctx  context.Context
	f    *os.File
	path string
	done bool
}

// Create starts writing path. The data goes to a hidden temporary file in
// the same folder, created with mode 0666 less the umask (what os.Create
// gives). Writes fail with ctx's error once ctx is done, which makes any
// writer that stops on a write error interruptible.
func Create(ctx context.Context, path string) (*File, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	for range 100 {
		var rnd [6]byte
		rand.Read(rnd[:])
		tmp := filepath.Join(dir, "."+base+"."+hex.EncodeToString(rnd[:])+".tmp")
		f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return &File{ctx: ctx, f: f, path: path}, nil
	}
	return nil, &fs.PathError{Op: "create", Path: path, Err: fs.ErrExist}
}

// Write writes to the temporary file, or returns ctx's error once ctx is
// done.
func (f *File) Write(p []byte) (int, error) {
	if err := f.ctx.Err(); err != nil {
		return 0, err
	}
	return f.f.Write(p)
}

// WriteAt writes at offset off of the temporary file, or returns ctx's
// error once ctx is done.
func (f *File) WriteAt(p []byte, off int64) (int, error) {
	if err := f.ctx.Err(); err != nil {
		return 0, err
	}
	return f.f.WriteAt(p, off)
}

// TempName returns the name of the temporary file.
func (f *File) TempName() string { return f.f.Name() }

// Commit flushes the temporary file to disk, closes it and renames it to
// the final name. On error the temporary file is removed.
func (f *File) Commit() error {
	if f.done {
		return errors.New("atomicfile: " + f.path + " already committed or aborted")
	}
	f.done = true
	err := f.ctx.Err()
	if err == nil {
		err = f.f.Sync()
	}
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.f.Name(), f.path)
	}
	if err != nil {
		os.Remove(f.f.Name())
	}
	return err
}

// Abort closes and removes the temporary file, unless Commit or Abort ran
// before.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.f.Close()
	os.Remove(f.f.Name())
}
