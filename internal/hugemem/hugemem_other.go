//go:build !linux

package hugemem

import (
	"errors"
	"unsafe"
)

const supported = false

var errUnsupported = errors.New("hugemem: huge pages are only supported on linux")

// Alloc returns ordinary Go memory on systems without transparent huge pages.
func Alloc(n int) (*Region, error) {
	if n <= 0 {
		return nil, errors.New("hugemem: cannot allocate a non-positive size")
	}
	b := make([]byte, n)
	return &Region{mem: b, bytes: b}, nil
}

// Free releases the region.
func (r *Region) Free() error {
	if r != nil {
		r.mem, r.bytes = nil, nil
	}
	return nil
}

// AdviseHuge is not supported here.
func AdviseHuge(b []byte) error { return errUnsupported }

func addrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
