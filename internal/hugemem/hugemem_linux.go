package hugemem

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

const supported = true

// Alloc maps n bytes of anonymous memory, aligned to HugePageSize and advised
// with MADV_HUGEPAGE so that, in the kernel's "madvise" THP mode, it is backed
// by 2 MiB pages. A refused advice is not an error: the memory still works on
// 4 KiB pages, and Advised reports it.
func Alloc(n int) (*Region, error) {
	if n <= 0 {
		return nil, fmt.Errorf("hugemem: cannot allocate %d bytes", n)
	}
	// Over-allocate by one huge page so the returned part can start on a
	// huge-page boundary (the kernel aligns only to 4 KiB), then unmap the slack.
	size := (n + HugePageSize - 1) &^ (HugePageSize - 1)
	total := uintptr(size + HugePageSize)
	base, err := unix.MmapPtr(-1, 0, nil, total, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("hugemem: mmap %d bytes: %w", total, err)
	}
	lead := (HugePageSize - uintptr(base)%HugePageSize) % HugePageSize
	start := unsafe.Add(base, lead)
	if lead > 0 {
		if err := unix.MunmapPtr(base, lead); err != nil {
			unix.MunmapPtr(base, total)
			return nil, fmt.Errorf("hugemem: trim: %w", err)
		}
	}
	if tail := total - lead - uintptr(size); tail > 0 {
		if err := unix.MunmapPtr(unsafe.Add(start, size), tail); err != nil {
			unix.MunmapPtr(start, uintptr(size))
			return nil, fmt.Errorf("hugemem: trim: %w", err)
		}
	}
	mem := unsafe.Slice((*byte)(start), size)
	r := &Region{mem: mem, bytes: mem[:n:n]}
	r.huge = unix.Madvise(mem, unix.MADV_HUGEPAGE) == nil
	return r, nil
}

// Free unmaps the region; its Bytes must not be used afterwards.
func (r *Region) Free() error {
	if r == nil || r.mem == nil {
		return nil
	}
	err := unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(r.mem)), uintptr(len(r.mem)))
	r.mem, r.bytes = nil, nil
	if err != nil {
		return fmt.Errorf("hugemem: munmap: %w", err)
	}
	return nil
}

// AdviseHuge asks the kernel to back an existing mapping (for example a
// read-only file map) with huge pages. For file-backed memory this succeeds
// only on kernels with read-only file THP; the error says when it is refused.
func AdviseHuge(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	// madvise wants a page-aligned start: extend the range down to its page.
	lead := int(addrOf(b) % 4096)
	whole := unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(b)), -lead)), lead+len(b))
	if err := unix.Madvise(whole, unix.MADV_HUGEPAGE); err != nil {
		return fmt.Errorf("hugemem: madvise(MADV_HUGEPAGE): %w", err)
	}
	return nil
}

func addrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
