//go:build !noasm

#include "textflag.h"

// func prefetchLines(p *byte, lines int)
//
// PREFETCHT0 of lines cache lines from p on (written by hand: a loop of
// one instruction, no twin to keep in step).
TEXT ·prefetchLines(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ lines+8(FP), CX
	TESTQ CX, CX
	JLE done
loop:
	PREFETCHT0 (SI)
	ADDQ $64, SI
	DECQ CX
	JNZ loop
done:
	RET
