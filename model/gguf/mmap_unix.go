//go:build unix

package gguf

import (
	"fmt"
	"math"
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps the file at path read-only and returns its bytes, the
// function that unmaps them, and whether they are a memory map.
func mapFile(path string) ([]byte, func() error, bool, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, nil, false, err
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		return nil, nil, false, err
	}
	if !st.Mode().IsRegular() {
		return nil, nil, false, fmt.Errorf("%s: not a regular file", path)
	}
	size := st.Size()
	if size == 0 {
		return nil, func() error { return nil }, false, nil // mmap refuses empty files; Parse reports it
	}
	if size > math.MaxInt {
		return nil, nil, false, fmt.Errorf("%s: %d bytes is too large to map", path, size)
	}
	data, err := unix.Mmap(int(fd.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, false, fmt.Errorf("%s: mmap: %w", path, err)
	}
	return data, func() error { return unix.Munmap(data) }, true, nil
}
