//go:build !purego

#include "textflag.h"

// func cleanCopy(dst, src []byte) int
//
// SSE2 (every amd64 has it): 16 bytes per step, each block stored into
// dst before it is checked, as the Go word loop does.
TEXT ·cleanCopy(SB), NOSPLIT, $0-56
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), BX
	XORQ AX, AX
	MOVQ $0x2222222222222222, DX
	MOVQ DX, X1
	PUNPCKLQDQ X1, X1
	MOVQ $0x5c5c5c5c5c5c5c5c, DX
	MOVQ DX, X2
	PUNPCKLQDQ X2, X2
	MOVQ $0x2020202020202020, DX
	MOVQ DX, X3
	PUNPCKLQDQ X3, X3

loop:
	LEAQ 16(AX), CX
	CMPQ CX, BX
	JA   done
	MOVOU (SI)(AX*1), X0
	MOVOU X0, (DI)(AX*1)
	// Signed, 0x20 > b holds for control bytes and for bytes >= 0x80.
	MOVO    X3, X4
	PCMPGTB X0, X4
	MOVO    X0, X5
	PCMPEQB X1, X5
	PCMPEQB X2, X0
	POR     X5, X4
	POR     X0, X4
	PMOVMSKB X4, DX
	TESTL   DX, DX
	JNZ     found
	MOVQ    CX, AX
	JMP     loop

found:
	BSFL DX, DX
	ADDQ DX, AX

done:
	MOVQ AX, ret+48(FP)
	RET
