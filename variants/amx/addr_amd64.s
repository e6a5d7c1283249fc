//go:build !noasm

#include "textflag.h"

// FUNC_ADDR returns the address of fn's code (a func() *byte's body).
#define FUNC_ADDR(fn) \
	LEAQ fn(SB), AX; \
	MOVQ AX, ret+0(FP); \
	RET

// func tileKernelAddr() *byte
TEXT ·tileKernelAddr(SB), NOSPLIT, $0-8
	FUNC_ADDR(·tileKernel)

// func bf16KernelAddr() *byte
TEXT ·bf16KernelAddr(SB), NOSPLIT, $0-8
	FUNC_ADDR(·bf16Kernel)

// func tileKernelWRAddr() *byte
TEXT ·tileKernelWRAddr(SB), NOSPLIT, $0-8
	FUNC_ADDR(·tileKernelWR)

// func tileKernelILAddr() *byte
TEXT ·tileKernelILAddr(SB), NOSPLIT, $0-8
	FUNC_ADDR(·tileKernelIL)

// func r16sKernelAddr() *byte
TEXT ·r16sKernelAddr(SB), NOSPLIT, $0-8
	FUNC_ADDR(·r16sKernel)

// func r16s6KernelAddr() *byte
TEXT ·r16s6KernelAddr(SB), NOSPLIT, $0-8
	FUNC_ADDR(·r16s6Kernel)

// func r16swKernelAddr() *byte
TEXT ·r16swKernelAddr(SB), NOSPLIT, $0-8
	FUNC_ADDR(·r16swKernel)
