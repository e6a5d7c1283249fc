//go:build !linux

package gguf

// releasePages does nothing where MADV_DONTNEED's semantics on file maps
// are not relied on.
func releasePages(b []byte) error { return nil }
