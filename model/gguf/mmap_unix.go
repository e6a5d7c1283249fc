//go:build unix

package gguf

import (
	"errors"
	"fmt"
	"math"
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps the file at path read-only and returns its bytes, the file
// kept open for reads (File.ReadInto), the function that unmaps the bytes
// and closes the file, and whether the bytes are a memory map.
func mapFile(path string) ([]byte, *os.File, func() error, bool, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, nil, nil, false, err
	}
	fail := func(err error) ([]byte, *os.File, func() error, bool, error) {
		fd.Close()
		return nil, nil, nil, false, err
	}
	st, err := fd.Stat()
	if err != nil {
		return fail(err)
	}
	if !st.Mode().IsRegular() {
		return fail(fmt.Errorf("%s: not a regular file", path))
	}
	size := st.Size()
	if size == 0 {
		fd.Close()
		return nil, nil, func() error { return nil }, false, nil // mmap refuses empty files; Parse reports it
	}
	if size > math.MaxInt {
		return fail(fmt.Errorf("%s: %d bytes is too large to map", path, size))
	}
	data, err := unix.Mmap(int(fd.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return fail(fmt.Errorf("%s: mmap: %w", path, err))
	}
	return data, fd, func() error { return errors.Join(unix.Munmap(data), fd.Close()) }, true, nil
}
