#include "textflag.h"

// 0x2f, 0x3a and 6 in every byte: a delimiter is a byte up to 0x2f, or
// one whose distance above 0x3a (':') is at most 6 ('@'), both unsigned,
// so bytes from 0x80 up are none.
DATA delim2f<>+0(SB)/8, $0x2f2f2f2f2f2f2f2f
DATA delim2f<>+8(SB)/8, $0x2f2f2f2f2f2f2f2f
GLOBL delim2f<>(SB), RODATA|NOPTR, $16
DATA delim3a<>+0(SB)/8, $0x3a3a3a3a3a3a3a3a
DATA delim3a<>+8(SB)/8, $0x3a3a3a3a3a3a3a3a
GLOBL delim3a<>(SB), RODATA|NOPTR, $16
DATA delim06<>+0(SB)/8, $0x0606060606060606
DATA delim06<>+8(SB)/8, $0x0606060606060606
GLOBL delim06<>(SB), RODATA|NOPTR, $16

// DELIM16 sets bit k of r for each delimiter among the 16 bytes at off(SI),
// through X0-X2; X8-X10 hold the constants. x <= c unsigned is
// min(x, c) == x.
#define DELIM16(off, r) \
	MOVOU   off(SI), X0 \
	MOVO    X0, X1 \
	PMINUB  X8, X1 \
	PCMPEQB X0, X1 \
	PSUBB   X9, X0 \
	MOVO    X0, X2 \
	PMINUB  X10, X2 \
	PCMPEQB X0, X2 \
	POR     X2, X1 \
	PMOVMSKB X1, r

// func delimiterVector(p *[64]byte) uint64
TEXT ·delimiterVector(SB), NOSPLIT, $0-16
	MOVQ  p+0(FP), SI
	MOVOU delim2f<>(SB), X8
	MOVOU delim3a<>(SB), X9
	MOVOU delim06<>(SB), X10
	DELIM16(0, AX)
	DELIM16(16, BX)
	DELIM16(32, CX)
	DELIM16(48, DX)
	SHLQ $16, BX
	SHLQ $32, CX
	SHLQ $48, DX
	ORQ  BX, AX
	ORQ  DX, CX
	ORQ  CX, AX
	MOVQ AX, ret+8(FP)
	RET

