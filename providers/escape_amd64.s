#include "textflag.h"

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

// HALVES(q, x, y): the bytes of q (8 to 15 of a 16-byte table) in both halves of y,
// bytes 0 to 7 zero; x is y's lower half.
#define HALVES(q, x, y) \
	MOVQ q, AX \
	VMOVQ AX, x \
	VPSLLDQ $8, x, x \
	VPERMQ $0x44, y, y

// SHORTCONTROL(y, to): in to, all ones where y's byte is \b \t \n \f or \r (zero above
// 0x7f). Y13 holds 0x10, Y14 all ones at those bytes' low halves.
#define SHORTCONTROL(y, to) \
	VPSHUFB y, Y14, to \
	VPCMPGTB y, Y13, Y5 \
	VPAND Y5, to, to

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
	HALVES($0x0000ffff00ffffff, X14, Y14)
	SUBQ $32, CX

lenloop:
	CMPQ DX, CX
	JGT lendone
	VMOVDQU (SI)(DX*1), Y0
	SPECIAL(Y0)
	// Y4: the two-byte escapes among the control bytes.
	SHORTCONTROL(Y0, Y4)
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

// EXPAND(x, shift): writes the 8 bytes at the bottom of x, the block's bytes from shift
// on, each special one as '\\' and its letter (x holds the letters in their place), at
// DI+BX, and advances BX. AX holds the block's special bytes, R10 the expansion table.
#define EXPAND(x, shift) \
	MOVL AX, R11 \
	SHRL $shift, R11 \
	MOVBLZX R11B, R11 \
	POPCNTL R11, R13 \
	SHLL $4, R11 \
	VMOVDQU (R10)(R11*1), X4 \
	VPSHUFB X4, x, X5 \
	VPBLENDVB X4, X12, X5, X5 \
	VMOVDQU X5, (DI)(BX*1) \
	LEAQ 8(BX)(R13*1), BX

// func escapeAVX2(dst, s []byte, words *[128]uint64, expand *[256][16]byte) (n, i int)
TEXT ·escapeAVX2(SB), NOSPLIT, $0-80
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
	BYTES($0x10, Y13)
	HALVES($0x0000ffff00ffffff, X14, Y14)
	// Y9: the letters of \b \t \n \f \r, by low half-byte.
	HALVES($0x00007266006e7462, X9, Y9)
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
	JNZ specials
	ADDQ $32, DX
	ADDQ $32, BX
	JMP block

specials:
	// With two-byte escapes only (most source code's blocks), each 8 bytes are
	// shuffled into place with a table; else one special byte at a time.
	SHORTCONTROL(Y0, Y4)
	VPCMPGTB Y0, Y10, Y5
	VPANDN Y5, Y4, Y6
	VPMOVMSKB Y6, R13
	TESTL R13, R13
	JNZ special
	VPSHUFB Y0, Y9, Y6
	VPBLENDVB Y5, Y6, Y0, Y0
	VEXTRACTI128 $1, Y0, X7
	MOVQ expand+56(FP), R10
	EXPAND(X0, 0)
	VPSRLDQ $8, X0, X0
	EXPAND(X0, 8)
	EXPAND(X7, 16)
	VPSRLDQ $8, X7, X7
	EXPAND(X7, 24)
	ADDQ $32, DX
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
	MOVQ BX, n+64(FP)
	MOVQ DX, i+72(FP)
	VZEROUPPER
	RET
