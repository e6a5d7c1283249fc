// Package amx holds the Intel AMX instruction encodings for Go assembly
// (amx_amd64.h, BYTE macros with each instruction's encoding documented) and
// two single-tile matrix products that prove them: one int8 (TDPBSSD) and one
// bf16 (TDPBF16PS) 16×16 block, checked against scalar products in the tests.
// Kernels elsewhere include the header; these functions are their reference
// for the calling pattern (permission first, LDTILECFG…TILERELEASE in one call).
package amx

import (
	"encoding/binary"

	"github.com/damascus-llm/damascus/internal/cpufeat"
)

// Tile geometry of palette 1: at most 16 rows of 64 bytes per tile.
const (
	MaxRows     = 16
	MaxRowBytes = 64
	// Shapes of the single-tile products below.
	M     = 16 // rows of A and C
	N     = 16 // columns of B and C
	KInt8 = 64 // inner dimension of the int8 product (64 int8 per A row)
	KBF16 = 32 // inner dimension of the bf16 product (32 bf16 per A row)
)

// Config is the 64-byte operand of LDTILECFG: byte 0 the palette, byte 1 the
// start row, bytes 16..47 bytes-per-row of tiles 0..15 (uint16 little-endian),
// bytes 48..63 rows of tiles 0..15. Unused tiles stay 0 (unconfigured).
type Config [64]byte

// NewConfig returns a palette-1 configuration with no tiles set.
func NewConfig() *Config {
	var c Config
	c[0] = 1
	return &c
}

// SetTile configures tile t as rows × bytesPerRow.
func (c *Config) SetTile(t, rows, bytesPerRow int) {
	binary.LittleEndian.PutUint16(c[16+2*t:], uint16(bytesPerRow))
	c[48+t] = byte(rows)
}

// fullTiles configures tiles 0..7 as 16 rows × 64 bytes.
func fullTiles() *Config {
	c := NewConfig()
	for t := 0; t < 8; t++ {
		c.SetTile(t, MaxRows, MaxRowBytes)
	}
	return c
}

// Available reports nil when AMX can be used by this process (see cpufeat.AMX).
func Available() error { return cpufeat.AMX() }

// PackInt8 rearranges B (KInt8 rows × N columns, row-major) into the layout
// TDPBSSD reads: KInt8/4 rows, each N groups of the 4 consecutive-k values of
// one column.
func PackInt8(dst *[KInt8 * N]int8, b *[KInt8 * N]int8) {
	for k := 0; k < KInt8; k++ {
		for n := 0; n < N; n++ {
			dst[(k/4)*N*4+n*4+k%4] = b[k*N+n]
		}
	}
}

// PackBF16 rearranges B (KBF16 rows × N columns, row-major bf16) into pairs
// of consecutive-k values per column, the layout TDPBF16PS reads.
func PackBF16(dst *[KBF16 * N]uint16, b *[KBF16 * N]uint16) {
	for k := 0; k < KBF16; k++ {
		for n := 0; n < N; n++ {
			dst[(k/2)*N*2+n*2+k%2] = b[k*N+n]
		}
	}
}

// MatmulInt8 computes C += A·B for one tile: A is M×KInt8 int8 (row-major), B
// is packed by PackInt8, C is M×N int32 (row-major). It returns the reason when
// AMX is unusable.
func MatmulInt8(c *[M * N]int32, a *[M * KInt8]int8, bPacked *[KInt8 * N]int8) error {
	if err := Available(); err != nil {
		return err
	}
	return matmulInt8(c, a, bPacked)
}

// MatmulBF16 computes C += A·B for one tile: A is M×KBF16 bf16 bits
// (row-major), B is packed by PackBF16, C is M×N float32 (row-major).
func MatmulBF16(c *[M * N]float32, a *[M * KBF16]uint16, bPacked *[KBF16 * N]uint16) error {
	if err := Available(); err != nil {
		return err
	}
	return matmulBF16(c, a, bPacked)
}
