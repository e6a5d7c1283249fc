//go:build !noasm

package amx

// The kernels' entry addresses, for the test that disassembles their tile
// programs (test binaries carry no symbol table).

func tileKernelAddr() *byte

func tileKernelWRAddr() *byte

func tileKernelILAddr() *byte

func bf16KernelAddr() *byte

func r16sKernelAddr() *byte

func r16s6KernelAddr() *byte

func r16swKernelAddr() *byte
