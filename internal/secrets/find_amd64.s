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

// func anchorMasksAVX2(b []byte, masks []uint64, t *[8][32]byte)
TEXT ·anchorMasksAVX2(SB), NOSPLIT, $0-56
	MOVQ b_base+0(FP), SI
	MOVQ b_len+8(FP), CX
	MOVQ masks_base+24(FP), DI
	MOVQ masks_len+32(FP), DX
	MOVQ t+48(FP), BX
	SUBQ $2, CX
	JLT avxdone
	SHRQ $6, CX
	CMPQ CX, DX
	CMOVQGT DX, CX

	VMOVDQU 0(BX), Y8   // before, low nibble
	VMOVDQU 32(BX), Y9  // before, high nibble
	VMOVDQU 64(BX), Y10 // after, low nibble
	VMOVDQU 96(BX), Y11 // after, high nibble
	VMOVDQU 128(BX), Y12 // anchor for before, low nibble
	VMOVDQU 160(BX), Y13 // anchor for before, high nibble
	VMOVDQU 192(BX), Y14 // anchor for after, low nibble
	VMOVDQU 224(BX), Y15 // anchor for after, high nibble
	MOVQ $0x0f0f0f0f0f0f0f0f, AX
	MOVQ AX, X7
	VPBROADCASTQ X7, Y7

// HALF(off, reg): bit j of reg for the byte at off+1+j, the one at off+j before it and the
// one at off+2+j after it.
#define HALF(off, reg) \
	VMOVDQU off+1(SI), Y0 \
	VPSRLW $4, Y0, Y1 \
	VPAND Y7, Y0, Y0 \
	VPAND Y7, Y1, Y1 \
	VPSHUFB Y0, Y12, Y2 \
	VPSHUFB Y1, Y13, Y3 \
	VPAND Y3, Y2, Y2 \
	VPSHUFB Y0, Y14, Y3 \
	VPSHUFB Y1, Y15, Y4 \
	VPAND Y4, Y3, Y3 \
	VMOVDQU off(SI), Y0 \
	VPSRLW $4, Y0, Y1 \
	VPAND Y7, Y0, Y0 \
	VPAND Y7, Y1, Y1 \
	VPSHUFB Y0, Y8, Y4 \
	VPSHUFB Y1, Y9, Y5 \
	VPAND Y5, Y4, Y4 \
	VPAND Y4, Y2, Y2 \
	VMOVDQU off+2(SI), Y0 \
	VPSRLW $4, Y0, Y1 \
	VPAND Y7, Y0, Y0 \
	VPAND Y7, Y1, Y1 \
	VPSHUFB Y0, Y10, Y4 \
	VPSHUFB Y1, Y11, Y5 \
	VPAND Y5, Y4, Y4 \
	VPAND Y4, Y3, Y3 \
	VPOR Y3, Y2, Y2 \
	VPXOR Y6, Y6, Y6 \
	VPCMPEQB Y6, Y2, Y2 \
	VPMOVMSKB Y2, reg \
	NOTL reg

avxloop:
	TESTQ CX, CX
	JZ avxdone
	HALF(0, AX)
	HALF(32, R8)
	SHLQ $32, R8
	ORQ R8, AX
	MOVQ AX, (DI)
	ADDQ $64, SI
	ADDQ $8, DI
	DECQ CX
	JMP avxloop

avxdone:
	VZEROUPPER
	RET
