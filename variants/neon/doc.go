// Package neon holds arm64 assembly kernels using Advanced SIMD and the
// dot-product extension (SDOT), which Go's assembler lacks and which is
// therefore WORD-encoded. On other architectures, or with the noasm build
// tag, the package is empty and registers nothing. The tests run under
// qemu-aarch64 on amd64 hosts:
//
//	GOARCH=arm64 go test -exec qemu-aarch64-static ./variants/neon/
package neon
