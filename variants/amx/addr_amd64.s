//go:build !noasm

#include "textflag.h"

// func tileKernelAddr() *byte
TEXT ·tileKernelAddr(SB), NOSPLIT, $0-8
	LEAQ ·tileKernel(SB), AX
	MOVQ AX, ret+0(FP)
	RET

// func bf16KernelAddr() *byte
TEXT ·bf16KernelAddr(SB), NOSPLIT, $0-8
	LEAQ ·bf16Kernel(SB), AX
	MOVQ AX, ret+0(FP)
	RET

// func tileKernelWRAddr() *byte
TEXT ·tileKernelWRAddr(SB), NOSPLIT, $0-8
	LEAQ ·tileKernelWR(SB), AX
	MOVQ AX, ret+0(FP)
	RET

// func tileKernelILAddr() *byte
TEXT ·tileKernelILAddr(SB), NOSPLIT, $0-8
	LEAQ ·tileKernelIL(SB), AX
	MOVQ AX, ret+0(FP)
	RET
