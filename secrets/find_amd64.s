#include "textflag.h"

// func anchorMasks(b []byte, masks []uint64)
TEXT ·anchorMasks(SB), NOSPLIT, $0-48
	MOVQ b_base+0(FP), SI
	MOVQ b_len+8(FP), CX
	MOVQ masks_base+24(FP), DI
	MOVQ masks_len+32(FP), DX
	SHRQ $6, CX
	CMPQ CX, DX
	CMOVQGT DX, CX

	// X0..X3: '-', 'k', 'A', '_' in every byte.
	MOVQ $0x2d2d2d2d2d2d2d2d, AX
	MOVQ AX, X0
	PUNPCKLQDQ X0, X0
	MOVQ $0x6b6b6b6b6b6b6b6b, AX
	MOVQ AX, X1
	PUNPCKLQDQ X1, X1
	MOVQ $0x4141414141414141, AX
	MOVQ AX, X2
	PUNPCKLQDQ X2, X2
	MOVQ $0x5f5f5f5f5f5f5f5f, AX
	MOVQ AX, X3
	PUNPCKLQDQ X3, X3

loop:
	TESTQ CX, CX
	JZ done

#define MATCH(off, reg) \
	MOVOU off(SI), X4 \
	MOVO X4, X5 \
	PCMPEQB X0, X5 \
	MOVO X4, X6 \
	PCMPEQB X1, X6 \
	POR X6, X5 \
	MOVO X4, X6 \
	PCMPEQB X2, X6 \
	POR X6, X5 \
	PCMPEQB X3, X4 \
	POR X4, X5 \
	PMOVMSKB X5, reg

	MATCH(0, AX)
	MATCH(16, BX)
	MATCH(32, R8)
	MATCH(48, R9)
	SHLQ $16, BX
	SHLQ $32, R8
	SHLQ $48, R9
	ORQ BX, AX
	ORQ R8, AX
	ORQ R9, AX
	MOVQ AX, (DI)

	ADDQ $64, SI
	ADDQ $8, DI
	DECQ CX
	JMP loop

done:
	RET
