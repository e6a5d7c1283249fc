//go:build !unix

package gguf

import "os"

// mapFile reads the whole file where memory maps are not available.
func mapFile(path string) ([]byte, func() error, bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, false, err
	}
	return data, func() error { return nil }, false, nil
}
