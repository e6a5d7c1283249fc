package roofline

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// buffer is an anonymous mapping whose data starts on a 2 MiB boundary, so
// every huge page the kernel can use lies wholly inside it.
type buffer struct {
	mapping []byte
	data    []byte
}

func mapBuffer(size int, pages Pages) (*buffer, error) {
	m, err := unix.Mmap(-1, 0, size+hugePageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("mmap %d bytes: %w", size, err)
	}
	off := 0
	if rem := int(uintptr(unsafe.Pointer(&m[0])) % hugePageSize); rem != 0 {
		off = hugePageSize - rem
	}
	b := &buffer{mapping: m, data: m[off : off+size]}
	advice := unix.MADV_NOHUGEPAGE
	if pages == PagesHuge {
		advice = unix.MADV_HUGEPAGE
	}
	if err := unix.Madvise(b.data, advice); err != nil {
		b.unmap()
		return nil, fmt.Errorf("madvise(%s pages): %w", pages, err)
	}
	return b, nil
}

func (b *buffer) unmap() { _ = unix.Munmap(b.mapping) }

// hugePageBytes sums AnonHugePages over the mappings in /proc/self/smaps that
// overlap the buffer (madvise may have split it), or -1 if unreadable.
func (b *buffer) hugePageBytes() int64 {
	lo := uint64(uintptr(unsafe.Pointer(&b.data[0])))
	hi := lo + uint64(len(b.data))
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return -1
	}
	defer f.Close()
	var total int64
	inside := false
	found := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if start, end, ok := parseRange(line); ok {
			inside = start < hi && end > lo
			found = found || inside
			continue
		}
		if inside && strings.HasPrefix(line, "AnonHugePages:") {
			fields := strings.Fields(line)
			if len(fields) >= 2 {
				kb, err := strconv.ParseInt(fields[1], 10, 64)
				if err != nil {
					return -1
				}
				total += kb << 10
			}
		}
	}
	if sc.Err() != nil || !found {
		return -1
	}
	return total
}

// parseRange parses a smaps header line "start-end perms ...".
func parseRange(line string) (start, end uint64, ok bool) {
	first, _, _ := strings.Cut(line, " ")
	a, b, ok := strings.Cut(first, "-")
	if !ok {
		return 0, 0, false
	}
	start, err1 := strconv.ParseUint(a, 16, 64)
	end, err2 := strconv.ParseUint(b, 16, 64)
	return start, end, err1 == nil && err2 == nil
}
