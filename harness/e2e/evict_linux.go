package e2e

import (
	"os"

	"golang.org/x/sys/unix"
)

// evict drops the file's pages from the page cache, for the cold starts.
func evict(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}
