#include "textflag.h"

// func hasAVX2() bool
TEXT ·hasAVX2(SB), NOSPLIT, $0-1
	XORL AX, AX
	XORL CX, CX
	CPUID
	CMPL AX, $7
	JLT no
	// Leaf 1: ECX bit 23 POPCNT, bit 27 OSXSAVE, bit 28 AVX.
	MOVL $1, AX
	XORL CX, CX
	CPUID
	ANDL $0x18800000, CX
	CMPL CX, $0x18800000
	JNE no
	// XCR0: the system saves the SSE and AVX registers.
	XORL CX, CX
	XGETBV
	ANDL $6, AX
	CMPL AX, $6
	JNE no
	// Leaf 7: EBX bit 5 AVX2.
	MOVL $7, AX
	XORL CX, CX
	CPUID
	BTL $5, BX
	JCC no
	MOVB $1, ret+0(FP)
	RET
no:
	MOVB $0, ret+0(FP)
	RET

// BYTES(c, reg): c in every byte of reg.
#define BYTES(c, reg) \
	MOVL c, AX \
	VMOVQ AX, X9 \
	VPBROADCASTB X9, reg

// SPECIAL(y): in every byte of Y1, all ones where y's byte needs escaping or is above
// 0x7f (under 0x20 as a signed byte, '"', '\\'). Y10, Y11 and Y12 hold 0x20, '"', '\\'.
#define SPECIAL(y) \
	VPCMPGTB y, Y10, Y1 \
	VPCMPEQB y, Y11, Y2 \
	VPCMPEQB y, Y12, Y3 \
	VPOR Y2, Y1, Y1 \
	VPOR Y3, Y1, Y1

// func escapedLenAVX2(s []byte) (n, i int)
TEXT ·escapedLenAVX2(SB), NOSPLIT, $0-40
	MOVQ s_base+0(FP), SI
	MOVQ s_len+8(FP), CX
	XORQ DX, DX // i
	XORQ BX, BX // the bytes the escapes add
	BYTES($0x20, Y10)
	BYTES($0x22, Y11)
	BYTES($0x5c, Y12)
	BYTES($0x10, Y13)
	// Y14: all ones at \b \t \n \f \r, by low half-byte.
	MOVQ $0x0000ffff00ffffff, AX
	VMOVQ AX, X14
	VPSLLDQ $8, X14, X14
	VPERMQ $0x44, Y14, Y14
	SUBQ $32, CX

lenloop:
	CMPQ DX, CX
	JGT lendone
	VMOVDQU (SI)(DX*1), Y0
	SPECIAL(Y0)
	// Y4: the two-byte escapes among the control bytes (0 where y is above 0x7f).
	VPSHUFB Y0, Y14, Y4
	VPCMPGTB Y0, Y13, Y5
	VPAND Y5, Y4, Y4
	// Y5: the six-byte ones (and the bytes above 0x7f).
	VPCMPGTB Y0, Y10, Y5
	VPANDN Y5, Y4, Y5
	VPMOVMSKB Y0, R8
	VPMOVMSKB Y1, R9
	VPMOVMSKB Y5, R10
	TESTL R8, R8
	JNZ lenhigh
	POPCNTL R9, R9
	POPCNTL R10, R10
	ADDQ R9, BX
	LEAQ (BX)(R10*4), BX
	ADDQ $32, DX
	JMP lenloop

lenhigh:
	// Count the bytes before the first one above 0x7f, and stop there.
	BSFL R8, R11
	MOVL R8, R12
	NEGL R12
	ANDL R8, R12
	DECL R12
	ANDL R12, R9
	ANDL R12, R10
	POPCNTL R9, R9
	POPCNTL R10, R10
	ADDQ R9, BX
	LEAQ (BX)(R10*4), BX
	ADDQ R11, DX

lendone:
	ADDQ DX, BX
	MOVQ BX, n+24(FP)
	MOVQ DX, i+32(FP)
	VZEROUPPER
	RET

// func escapeAVX2(dst, s []byte, words *[128]uint64) (n, i int)
TEXT ·escapeAVX2(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), R8
	MOVQ s_base+24(FP), SI
	MOVQ s_len+32(FP), CX
	MOVQ words+48(FP), R9
	XORQ DX, DX // i, at a block's start
	XORQ BX, BX // n
	BYTES($0x20, Y10)
	BYTES($0x22, Y11)
	BYTES($0x5c, Y12)
	SUBQ $64, CX
	SUBQ $224, R8

block:
	CMPQ DX, CX
	JGT escdone
	CMPQ BX, R8
	JGT escdone
	VMOVDQU (SI)(DX*1), Y0
	VMOVDQU Y0, (DI)(BX*1)
	SPECIAL(Y0)
	VPMOVMSKB Y1, AX
	TESTL AX, AX
	JNZ special
	ADDQ $32, DX
	ADDQ $32, BX
	JMP block

special:
	// R10: where in s the bytes not yet written start; R11: the block's end. The block's
	// bytes before its first special one are in place.
	MOVQ DX, R10
	LEAQ 32(DX), R11
	BSFL AX, R12
	JMP esc

next:
	BSFL AX, R12
	VMOVDQU (SI)(R10*1), Y4
	VMOVDQU Y4, (DI)(BX*1)

esc:
	// R12: the special byte's index in s.
	ADDQ DX, R12
	ADDQ R12, BX
	SUBQ R10, BX
	MOVBLZX (SI)(R12*1), R13
	CMPL R13, $0x80
	JAE high
	MOVQ (R9)(R13*8), R13
	MOVQ R13, (DI)(BX*1)
	SHRQ $56, R13
	ADDQ R13, BX
	LEAQ 1(R12), R10
	LEAL -1(AX), R13
	ANDL R13, AX
	JNZ next
	// The rest of the block.
	VMOVDQU (SI)(R10*1), Y4
	VMOVDQU Y4, (DI)(BX*1)
	ADDQ R11, BX
	SUBQ R10, BX
	MOVQ R11, DX
	JMP block

high:
	MOVQ R12, DX

escdone:
	MOVQ BX, n+56(FP)
	MOVQ DX, i+64(FP)
	VZEROUPPER
	RET
