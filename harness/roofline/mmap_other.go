//go:build !linux

package roofline

import (
	"errors"
	"runtime"
)

type buffer struct{ data []byte }

func mapBuffer(size int, pages Pages) (*buffer, error) {
	return nil, errors.New("unavailable: the memory probe needs Linux (mmap, madvise, /proc/self/smaps) on " + runtime.GOOS)
}

func (b *buffer) unmap() {}

func (b *buffer) hugePageBytes() int64 { return -1 }
