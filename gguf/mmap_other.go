//go:build !unix

package gguf

import "os"

// mapFile reads the whole file where memory maps are not available (no
// file kept open: File.ReadInto then copies).
func mapFile(path string) ([]byte, *os.File, func() error, bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, nil, false, err
	}
	return data, nil, func() error { return nil }, false, nil
}
