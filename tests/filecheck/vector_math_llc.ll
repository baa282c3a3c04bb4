; Upstream behaviour that src/driver/VectorMath.cpp works around: LLVM 22's
; llc -vector-library=LIBMVEC (ReplaceWithVeclib) maps <8 x float> llvm.sin
; to the AVX2 variant _ZGVdN8v_sinf even for the generic x86-64, whose
; caller passes the vector in two SSE registers while the callee reads one
; AVX register, and it has no AVX-512 variant (16 lanes stay 16 scalar
; logf calls). If either check fails, LLVM changed: see whether kinac can
; use llc's own mapping instead.
; RUN: llc -O2 -mcpu=x86-64 -vector-library=LIBMVEC %s -o - | FileCheck %s --check-prefix=GENERIC
; RUN: llc -O2 -mcpu=x86-64-v4 -vector-library=LIBMVEC %s -o - | FileCheck %s --check-prefix=V4
target triple = "x86_64-unknown-linux-gnu"

declare <8 x float> @llvm.sin.v8f32(<8 x float>)
declare <16 x float> @llvm.log.v16f32(<16 x float>)

; GENERIC-LABEL: sin8:
; GENERIC: _ZGVdN8v_sinf
define <8 x float> @sin8(<8 x float> %x) {
  %y = call <8 x float> @llvm.sin.v8f32(<8 x float> %x)
  ret <8 x float> %y
}

; V4-LABEL: log16:
; V4-COUNT-16: logf
; V4-NOT: _ZGV
define <16 x float> @log16(<16 x float> %x) {
  %y = call <16 x float> @llvm.log.v16f32(<16 x float> %x)
  ret <16 x float> %y
}
