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


// The fixed code of a byte b below 144 is the 8 bits of 0x30+b sent from
// the top bit down, that is bit-reversed: rev4 of each nibble, swapped.
// lit30 is the 0x30 to add, lit0f keeps a nibble, litrevlo and litrevhi
// map a nibble k to rev4(k) and to rev4(k)<<4 (PSHUFB tables), and lit8f
// is the largest byte with an 8-bit code.
DATA lit30<>+0(SB)/8, $0x3030303030303030
DATA lit30<>+8(SB)/8, $0x3030303030303030
GLOBL lit30<>(SB), RODATA|NOPTR, $16
DATA lit0f<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA lit0f<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL lit0f<>(SB), RODATA|NOPTR, $16
DATA litrevlo<>+0(SB)/8, $0x0e060a020c040800
DATA litrevlo<>+8(SB)/8, $0x0f070b030d050901
GLOBL litrevlo<>(SB), RODATA|NOPTR, $16
DATA litrevhi<>+0(SB)/8, $0xe060a020c0408000
DATA litrevhi<>+8(SB)/8, $0xf070b030d0509010
GLOBL litrevhi<>(SB), RODATA|NOPTR, $16
DATA lit8f<>+0(SB)/8, $0x8f8f8f8f8f8f8f8f
DATA lit8f<>+8(SB)/8, $0x8f8f8f8f8f8f8f8f
GLOBL lit8f<>(SB), RODATA|NOPTR, $16

// func codesVector(codes, src []byte) (i int, wide uint32)
//
// Each step codes 16 bytes of src into codes at the same offset and ORs
// into R10 the lanes above 0x8f (max(x, 0x8f) != 0x8f). SI and DI
// advance; R8 and R9 are the last addresses a step may start at.
TEXT ·codesVector(SB), NOSPLIT, $0-60
	MOVQ  codes_base+0(FP), DI
	MOVQ  codes_len+8(FP), DX
	MOVQ  src_base+24(FP), SI
	MOVQ  src_len+32(FP), BX
	MOVQ  SI, R11
	XORL  R10, R10
	CMPQ  BX, $16
	JB    done
	CMPQ  DX, $16
	JB    done
	LEAQ  -16(SI)(BX*1), R8
	LEAQ  -16(DI)(DX*1), R9
	MOVOU lit30<>(SB), X8
	MOVOU lit0f<>(SB), X9
	MOVOU litrevlo<>(SB), X10
	MOVOU litrevhi<>(SB), X11
	MOVOU lit8f<>(SB), X12

loop:
	MOVOU    (SI), X0
	MOVO     X0, X1
	PMAXUB   X12, X1
	PCMPEQB  X12, X1
	PMOVMSKB X1, AX
	XORL     $0xffff, AX
	ORL      AX, R10
	PADDB    X8, X0
	MOVO     X0, X1
	PSRLW    $4, X1
	PAND     X9, X1
	PAND     X9, X0
	MOVO     X11, X2
	PSHUFB   X0, X2
	MOVO     X10, X3
	PSHUFB   X1, X3
	POR      X3, X2
	MOVOU    X2, (DI)
	ADDQ     $16, SI
	ADDQ     $16, DI
	CMPQ     SI, R8
	JA       done
	CMPQ     DI, R9
	JBE      loop

done:
	SUBQ R11, SI
	MOVQ SI, i+48(FP)
	MOVL R10, wide+56(FP)
	RET
