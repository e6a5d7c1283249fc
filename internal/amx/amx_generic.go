//go:build !amd64 || noasm

package amx

import "errors"

var errNoAsm = errors.New("AMX kernels need the amd64 assembly (this build is non-amd64 or noasm)")

func matmulInt8(c *[M * N]int32, a *[M * KInt8]int8, b *[KInt8 * N]int8) error { return errNoAsm }

func matmulBF16(c *[M * N]float32, a *[M * KBF16]uint16, b *[KBF16 * N]uint16) error {
	return errNoAsm
}
