//go:build !linux

package llama

// physicalMemory is unknown here: checkMemory does not check.
func physicalMemory() uint64 { return 0 }
