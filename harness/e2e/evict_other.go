//go:build !linux

package e2e

import "errors"

// evict is linux only (posix_fadvise); elsewhere the run records the page cache
// state of its cold starts as unknown.
func evict(path string) error {
	return errors.New("evicting a file from the page cache is implemented on linux only")
}
