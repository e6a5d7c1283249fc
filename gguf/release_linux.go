package gguf

import "golang.org/x/sys/unix"

// releasePages drops b, whole pages of a read-only shared file map, from the
// resident set; later reads fault them back in from the page cache.
func releasePages(b []byte) error { return unix.Madvise(b, unix.MADV_DONTNEED) }
