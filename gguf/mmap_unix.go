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
	// O_NONBLOCK so that a FIFO (or a device) cannot block the open: the
	// file is refused below unless it is regular, where the flag means
	// nothing and is cleared.
	raw, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, nil, false, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var ust unix.Stat_t
	if err := unix.Fstat(raw, &ust); err != nil {
		unix.Close(raw)
		return nil, nil, nil, false, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if uint32(ust.Mode)&unix.S_IFMT != unix.S_IFREG {
		unix.Close(raw)
		return nil, nil, nil, false, fmt.Errorf("%s: not a regular file (%s)", path, fileKind(uint32(ust.Mode)))
	}
	if err := unix.SetNonblock(raw, false); err != nil {
		unix.Close(raw)
		return nil, nil, nil, false, &os.PathError{Op: "fcntl", Path: path, Err: err}
	}
	fd := os.NewFile(uintptr(raw), path)
	fail := func(err error) ([]byte, *os.File, func() error, bool, error) {
		fd.Close()
		return nil, nil, nil, false, err
	}
	st, err := fd.Stat()
	if err != nil {
		return fail(err)
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

func fileKind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFIFO:
		return "a named pipe"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	case unix.S_IFSOCK:
		return "a socket"
	}
	return "a special file"
}
