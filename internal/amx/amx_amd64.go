//go:build !noasm

package amx

func tileMatmulInt8(cfg *Config, c *int32, a *int8, b *int8)

func tileMatmulBF16(cfg *Config, c *float32, a *uint16, b *uint16)

func encodingSamples()

func encodingSamplesAddr() *byte

func matmulInt8(c *[M * N]int32, a *[M * KInt8]int8, b *[KInt8 * N]int8) error {
	tileMatmulInt8(fullTiles(), &c[0], &a[0], &b[0])
	return nil
}

func matmulBF16(c *[M * N]float32, a *[M * KBF16]uint16, b *[KBF16 * N]uint16) error {
	tileMatmulBF16(fullTiles(), &c[0], &a[0], &b[0])
	return nil
}
