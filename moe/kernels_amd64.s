//go:build !purego

#include "textflag.h"

// Row kernels of kernels_amd64.go, AVX2. Each handles n rounded down to a
// multiple of 8 elements; the Go wrapper does the rest. Multiplies and adds
// are separate instructions (no FMA), so results equal the portable Go
// kernels' bit for bit.

// func axpyF32AVX2(acc, x *float32, n int, w float32)
TEXT ·axpyF32AVX2(SB), NOSPLIT, $0-28
	MOVQ         acc+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS w+24(FP), Y0

f32loop32:
	CMPQ    CX, $32
	JLT     f32loop8
	VMULPS  (SI), Y0, Y1
	VMULPS  32(SI), Y0, Y2
	VMULPS  64(SI), Y0, Y3
	VMULPS  96(SI), Y0, Y4
	VADDPS  (DI), Y1, Y1
	VADDPS  32(DI), Y2, Y2
	VADDPS  64(DI), Y3, Y3
	VADDPS  96(DI), Y4, Y4
	VMOVUPS Y1, (DI)
	VMOVUPS Y2, 32(DI)
	VMOVUPS Y3, 64(DI)
	VMOVUPS Y4, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DI
	SUBQ    $32, CX
	JMP     f32loop32

f32loop8:
	CMPQ    CX, $8
	JLT     f32done
	VMULPS  (SI), Y0, Y1
	VADDPS  (DI), Y1, Y1
	VMOVUPS Y1, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     f32loop8

f32done:
	VZEROUPPER
	RET

// func scaleF32AVX2(acc, x *float32, n int, w float32)
TEXT ·scaleF32AVX2(SB), NOSPLIT, $0-28
	MOVQ         acc+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS w+24(FP), Y0

sf32loop8:
	CMPQ    CX, $8
	JLT     sf32done
	VMULPS  (SI), Y0, Y1
	VMOVUPS Y1, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     sf32loop8

sf32done:
	VZEROUPPER
	RET

// func axpyBF16AVX2(acc *float32, x *uint16, n int, w float32)
TEXT ·axpyBF16AVX2(SB), NOSPLIT, $0-28
	MOVQ         acc+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS w+24(FP), Y0

bfloop32:
	CMPQ      CX, $32
	JLT       bfloop8
	VPMOVZXWD (SI), Y1
	VPMOVZXWD 16(SI), Y2
	VPMOVZXWD 32(SI), Y3
	VPMOVZXWD 48(SI), Y4
	VPSLLD    $16, Y1, Y1
	VPSLLD    $16, Y2, Y2
	VPSLLD    $16, Y3, Y3
	VPSLLD    $16, Y4, Y4
	VMULPS    Y1, Y0, Y1
	VMULPS    Y2, Y0, Y2
	VMULPS    Y3, Y0, Y3
	VMULPS    Y4, Y0, Y4
	VADDPS    (DI), Y1, Y1
	VADDPS    32(DI), Y2, Y2
	VADDPS    64(DI), Y3, Y3
	VADDPS    96(DI), Y4, Y4
	VMOVUPS   Y1, (DI)
	VMOVUPS   Y2, 32(DI)
	VMOVUPS   Y3, 64(DI)
	VMOVUPS   Y4, 96(DI)
	ADDQ      $64, SI
	ADDQ      $128, DI
	SUBQ      $32, CX
	JMP       bfloop32

bfloop8:
	CMPQ      CX, $8
	JLT       bfdone
	VPMOVZXWD (SI), Y1
	VPSLLD    $16, Y1, Y1
	VMULPS    Y1, Y0, Y1
	VADDPS    (DI), Y1, Y1
	VMOVUPS   Y1, (DI)
	ADDQ      $16, SI
	ADDQ      $32, DI
	SUBQ      $8, CX
	JMP       bfloop8

bfdone:
	VZEROUPPER
	RET

// func scaleBF16AVX2(acc *float32, x *uint16, n int, w float32)
TEXT ·scaleBF16AVX2(SB), NOSPLIT, $0-28
	MOVQ         acc+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS w+24(FP), Y0

sbfloop8:
	CMPQ      CX, $8
	JLT       sbfdone
	VPMOVZXWD (SI), Y1
	VPSLLD    $16, Y1, Y1
	VMULPS    Y1, Y0, Y1
	VMOVUPS   Y1, (DI)
	ADDQ      $16, SI
	ADDQ      $32, DI
	SUBQ      $8, CX
	JMP       sbfloop8

sbfdone:
	VZEROUPPER
	RET

// func storeBF16AVX2(dst *uint16, src *float32, n int)
//
// Round to nearest even: bits + 0x7fff + ((bits >> 16) & 1), then >> 16;
// NaN (abs bits > 0x7f800000) becomes (bits >> 16) | 0x40, as BF16.
TEXT ·storeBF16AVX2(SB), NOSPLIT, $0-24
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         n+16(FP), CX
	MOVL         $1, AX
	MOVQ         AX, X8
	VPBROADCASTD X8, Y8  // 1
	MOVL         $0x7fff, AX
	MOVQ         AX, X9
	VPBROADCASTD X9, Y9  // rounding bias
	MOVL         $0x7fffffff, AX
	MOVQ         AX, X10
	VPBROADCASTD X10, Y10 // abs mask
	MOVL         $0x7f800000, AX
	MOVQ         AX, X11
	VPBROADCASTD X11, Y11 // infinity
	MOVL         $0x40, AX
	MOVQ         AX, X12
	VPBROADCASTD X12, Y12 // quiet bit

stloop8:
	CMPQ         CX, $8
	JLT          stdone
	VMOVDQU      (SI), Y1
	VPSRLD       $16, Y1, Y2
	VPAND        Y8, Y2, Y3  // lsb of the result
	VPADDD       Y9, Y3, Y3
	VPADDD       Y1, Y3, Y3
	VPSRLD       $16, Y3, Y3 // rounded
	VPOR         Y12, Y2, Y2 // NaN result
	VPAND        Y10, Y1, Y4
	VPCMPGTD     Y11, Y4, Y5 // is NaN
	VPXOR        Y3, Y2, Y2
	VPAND        Y5, Y2, Y2
	VPXOR        Y2, Y3, Y3  // rounded, or the NaN result where NaN
	VEXTRACTI128 $1, Y3, X4
	VPACKUSDW    X4, X3, X3
	VMOVDQU      X3, (DI)
	ADDQ         $32, SI
	ADDQ         $16, DI
	SUBQ         $8, CX
	JMP          stloop8

stdone:
	VZEROUPPER
	RET

// Round the float32 bits in IN to bfloat16 (low 16 bits of each dword of
// OUT), ties to even, NaN kept (as BF16: bits + 0x7fff + lsb, then >> 16;
// a NaN, which that could turn into infinity, becomes (bits >> 16) | 0x40).
// Needs Y8 = 1, Y9 = 0x7fff, Y12 = 0x40 in every dword; clobbers Y4, Y5.
#define ROUND_BF16(IN, OUT) \
	VPSRLD    $16, IN, Y4      \
	VPAND     Y8, Y4, Y5       \
	VPADDD    Y9, IN, OUT      \
	VPADDD    Y5, OUT, OUT     \
	VPSRLD    $16, OUT, OUT    \
	VPOR      Y12, Y4, Y4      \
	VCMPPS    $3, IN, IN, Y5   \
	VPBLENDVB Y5, Y4, OUT, OUT

// func sumRowsBF16AVX2(dst *uint16, rows **uint16, w *float32, nrows, n int)
//
// dst[i] = BF16(w[0]*rows[0][i] + w[1]*rows[1][i] + ...), summed left to
// right in float32, for i < n (a multiple of 16); nrows >= 1.
//
// 16 elements at a time: VPUNPCKLWD/VPUNPCKHWD with zero turn the 16 bf16
// of a row into two vectors of float32 (elements 0-3 and 8-11, then 4-7
// and 12-15: the bf16 bits become the high halves), which sum
// independently; VPACKUSDW of the two rounded vectors puts the 16 results
// back in order.
TEXT ·sumRowsBF16AVX2(SB), NOSPLIT, $0-40
	MOVQ         dst+0(FP), DI
	MOVQ         rows+8(FP), SI
	MOVQ         w+16(FP), DX
	MOVQ         nrows+24(FP), R8
	MOVQ         n+32(FP), CX
	MOVL         $1, R11
	MOVQ         R11, X8
	VPBROADCASTD X8, Y8
	MOVL         $0x7fff, R11
	MOVQ         R11, X9
	VPBROADCASTD X9, Y9
	MOVL         $0x40, R11
	MOVQ         R11, X12
	VPBROADCASTD X12, Y12
	VPXOR        Y15, Y15, Y15
	XORQ         AX, AX

sbloop:
	CMPQ         CX, $16
	JLT          sbdone
	MOVQ         (SI), R9
	VMOVDQU      (R9)(AX*2), Y6
	VPUNPCKLWD   Y6, Y15, Y0
	VPUNPCKHWD   Y6, Y15, Y1
	VBROADCASTSS (DX), Y7
	VMULPS       Y0, Y7, Y0
	VMULPS       Y1, Y7, Y1
	MOVQ         $1, R10

sbrows:
	CMPQ         R10, R8
	JGE          sbround
	MOVQ         (SI)(R10*8), R9
	VMOVDQU      (R9)(AX*2), Y6
	VPUNPCKLWD   Y6, Y15, Y2
	VPUNPCKHWD   Y6, Y15, Y3
	VBROADCASTSS (DX)(R10*4), Y7
	VMULPS       Y2, Y7, Y2
	VMULPS       Y3, Y7, Y3
	VADDPS       Y2, Y0, Y0
	VADDPS       Y3, Y1, Y1
	INCQ         R10
	JMP          sbrows

sbround:
	ROUND_BF16(Y0, Y2)
	ROUND_BF16(Y1, Y3)
	VPACKUSDW    Y3, Y2, Y2
	VMOVDQU      Y2, (DI)(AX*2)
	ADDQ         $16, AX
	SUBQ         $16, CX
	JMP          sbloop

sbdone:
	VZEROUPPER
	RET

// func sumRowsF32AVX2(dst *float32, rows **float32, w *float32, nrows, n int)
//
// dst[i] = w[0]*rows[0][i] + w[1]*rows[1][i] + ..., left to right, for
// i < n (a multiple of 8); nrows >= 1.
TEXT ·sumRowsF32AVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ rows+8(FP), SI
	MOVQ w+16(FP), DX
	MOVQ nrows+24(FP), R8
	MOVQ n+32(FP), CX
	XORQ AX, AX

sfloop:
	CMPQ         CX, $8
	JLT          sfdone
	MOVQ         (SI), R9
	VMOVUPS      (R9)(AX*4), Y0
	VBROADCASTSS (DX), Y1
	VMULPS       Y0, Y1, Y0
	MOVQ         $1, R10

sfrows:
	CMPQ         R10, R8
	JGE          sfstore
	MOVQ         (SI)(R10*8), R9
	VMOVUPS      (R9)(AX*4), Y2
	VBROADCASTSS (DX)(R10*4), Y3
	VMULPS       Y2, Y3, Y2
	VADDPS       Y2, Y0, Y0
	INCQ         R10
	JMP          sfrows

sfstore:
	VMOVUPS      Y0, (DI)(AX*4)
	ADDQ         $8, AX
	SUBQ         $8, CX
	JMP          sfloop

sfdone:
	VZEROUPPER
	RET
