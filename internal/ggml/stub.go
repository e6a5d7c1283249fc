//go:build !(linux && amd64)

package ggml

import (
	"fmt"

	"github.com/damascus-llm/damascus/quant"
)

// errPlatform is every call's error off linux/amd64, where no pinned
// build exists.
var errPlatform = fmt.Errorf("%w (the pinned build is linux/amd64 only)", ErrNotInstalled)

// LibDir reports that no pinned library directory exists on this platform.
func LibDir() (string, error) { return "", errPlatform }

// UseCPUVariant accepts any name: nothing will be loaded.
func UseCPUVariant(string) error { return nil }

// Available reports ErrNotInstalled.
func Available() error { return errPlatform }

// Loaded reports ErrNotInstalled.
func Loaded() (dir, cpuVariantPath string, err error) { return "", "", errPlatform }

// CPUVariant reports ErrNotInstalled.
func CPUVariant() (string, error) { return "", errPlatform }

// CPUVariants reports ErrNotInstalled.
func CPUVariants() ([]CPUVariantInfo, error) { return nil, errPlatform }

// LogCallback is 0: there is no library to log.
func LogCallback() uintptr { return 0 }

// LogMark is 0.
func LogMark() int { return 0 }

// LogSince says nothing was logged.
func LogSince(mark, n int) string { return "(llama.cpp logged nothing)" }

// Traits reports ErrNotInstalled.
func Traits(quant.Type) (TypeTraits, error) { return TypeTraits{}, errPlatform }

// Dequantize reports ErrNotInstalled.
func Dequantize(quant.Type, []byte, int) ([]float32, error) { return nil, errPlatform }

// Quantize reports ErrNotInstalled.
func Quantize(quant.Type, []float32, int, int) ([]byte, error) { return nil, errPlatform }

// QuantizeRowCPU reports ErrNotInstalled.
func QuantizeRowCPU(quant.Type, []float32) ([]byte, error) { return nil, errPlatform }

// VecDot reports ErrNotInstalled.
func VecDot(quant.Type, int, []byte, []byte) (float32, error) { return 0, errPlatform }

// ValidRowData reports ErrNotInstalled.
func ValidRowData(quant.Type, []byte) (bool, error) { return false, errPlatform }
