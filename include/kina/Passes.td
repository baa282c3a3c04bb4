//===- Passes.td - kinac's own passes, declared for TableGen --------------===//
//
// The declarations of the passes every target shares (src/passes/, one file
// each): argument, summary, description, options, dependent dialects.
// `mlir-tblgen -gen-pass-decls -name Kina` turns them into Passes.h.inc:
// each pass's options struct and create functions (GEN_PASS_DECL), its base
// class (GEN_PASS_DEF_<NAME>, in the pass's file) and registerKinaPasses()
// (GEN_PASS_REGISTRATION), which kina-opt calls. Passes.h includes the
// declarations and documents the C++ API; docs/architecture.md gives the
// order in which the targets' pipelines run them.
//
//===----------------------------------------------------------------------===//
#ifndef KINA_PASSES_TD
#define KINA_PASSES_TD

include "mlir/Pass/PassBase.td"

def ReadOnlyArgumentsPass
    : Pass<"kina-read-only-arguments", "mlir::ModuleOp"> {
  let summary = "Mark function arguments non-writable for bufferization";
  let description = [{
    Sets `bufferization.writable = false` on every argument of every function
    with a body: arguments are the caller's memory (spec, "ABI"), so
    one-shot bufferization must copy rather than write into them. Runs on
    MLIRGen's module on tensors, before `one-shot-bufferize`.
  }];
  let dependentDialects = ["mlir::bufferization::BufferizationDialect"];
}

def ElementwiseFusionPass
    : Pass<"kina-elementwise-fusion", "mlir::ModuleOp"> {
  let summary = "linalg-fuse-elementwise-ops within Kina's rank limit";
  let description = [{
    MLIR's `linalg-fuse-elementwise-ops` (the same patterns in the same
    order) with two fusions refused: a reshape folded by expansion into an
    op of more than KINA_MAX_RANK loops (the runtime allocates at most rank
    8), and a producer that reads its init fused through a broadcasting map
    (MLIR 22 keeps the init as an output under that map: wrong results).
    Runs on tensors, before bufferization, at -O1 and above. An MLIR 22
    workaround: src/passes/workarounds/ElementwiseFusion.cpp. With
    `keep-contractions` (the cuda target) no producer is fused into a
    contraction (a matmul, named or generic) and no reshape is folded into
    one: the cuda target hands plain contractions to cuBLASLt, and a fused
    one (the normalisation of a layer_norm, a transpose folded into a map,
    a reshape splitting k into two loops) would not be one any more.
  }];
  let options = [
    Option<"keepContractions", "keep-contractions", "bool",
           /*default=*/"false",
           "fuse no producer into a contraction (matmul)">
  ];
  let dependentDialects = ["mlir::affine::AffineDialect",
                           "mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect"];
}

def CloneSharedFillsPass
    : Pass<"kina-clone-shared-fills", "mlir::ModuleOp"> {
  let summary = "Give each destination use of a linalg.fill its own fill";
  let description = [{
    A `linalg.fill` on tensors read as the destination (init) of several
    ops (cse merges MLIRGen's equal fills) is cloned, with its
    `tensor.empty`, right before each of those ops but the first: one-shot
    bufferization would otherwise give each later op a copy of the filled
    buffer. Input uses keep the original. With `empties` (the cuda
    target), the rounding of a contraction's product (roundsContraction,
    kina/Passes.h) gets its own clone of a shared `tensor.empty`
    destination, so the rounded product is never written into the buffer
    of an earlier, dead op (the attention's V). Runs on tensors just before
    bufferization, at -O1 and above: src/passes/CloneSharedFills.cpp.
  }];
  let options = [
    Option<"empties", "empties", "bool", /*default=*/"false",
           "also give each contraction's rounding its own tensor.empty">
  ];
  let dependentDialects = ["mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect"];
}

def GeneralizeNamedOpsPass
    : Pass<"kina-generalize-named-ops", "mlir::ModuleOp"> {
  let summary = "linalg-generalize-named-ops without merging blocks";
  let description = [{
    Every named linalg op (linalg.fill, linalg.copy, linalg.matmul, ...)
    becomes its `linalg.generic` (linalg::generalizeNamedOp), one op at a
    time, with no pattern driver: MLIR 22's `linalg-generalize-named-ops`
    runs the greedy driver, whose aggressive region simplification merges
    identical blocks, and after kina-buffer-ownership it merges the
    early-return blocks of several allocations into one block taking the
    buffer as an argument, a use of an intermediate buffer the cuda
    mappers do not expect. An MLIR 22 workaround:
    src/passes/workarounds/GeneralizeNamedOps.cpp.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def ConstantGlobalOrderPass
    : Pass<"kina-constant-global-order", "mlir::ModuleOp"> {
  let summary = "One-shot bufferization's constant globals in a fixed order "
                "and naming";
  let description = [{
    Puts the private constant `memref.global`s named `__constant_*` in the
    order of their first `memref.get_global` in the module and names them
    again in that order as bufferization does (`__constant_4xf32`,
    `__constant_4xf32_0`, ...). MLIR 22's One-Shot Module Bufferize
    bufferizes functions that do not call each other in an order that
    follows their addresses (DenseMaps; fixed upstream by
    llvm/llvm-project#184722), so without this pass the globals' order and
    names changed from run to run. An MLIR 22 workaround:
    src/passes/workarounds/ConstantGlobalOrder.cpp.
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

def EmptyReshapePass : Pass<"kina-empty-reshape", "mlir::ModuleOp"> {
  let summary = "Replace reshapes of tensors with a static 0 dim by "
                "tensor.empty";
  let description = [{
    Replaces each `tensor.collapse_shape` and `tensor.expand_shape` whose
    source has a static 0 dim by a `tensor.empty` of its result's sizes:
    MLIR 22's bufferization turns a collapse of `?x0` into a memref op its
    own verifier rejects. Runs just before one-shot bufferization. An MLIR
    22 workaround: src/passes/workarounds/EmptyReshape.cpp.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::tensor::TensorDialect"];
}

def StridedCopiesPass : Pass<"kina-strided-copies", "mlir::ModuleOp"> {
  let summary = "Rewrite memref.copy ops that are not memcpys into "
                "linalg.copy";
  let description = [{
    Rewrites each `memref.copy` whose source or target is not contiguous
    (memref-to-llvm would call `memrefCopy`, a function of MLIR's
    c_runner_utils that kinac's objects do not link) into a `linalg.copy`
    of the same operands, lowered to loops by convert-linalg-to-loops.
    Contiguous copies are left to memref-to-llvm's memcpy. The cpu
    target runs it after bufferization: src/passes/StridedCopies.cpp.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def BufferOwnershipPass : Pass<"kina-buffer-ownership", "mlir::ModuleOp"> {
  let summary = "Caller-owned results, releases, and early returns on failure";
  let description = [{
    Runs right after one-shot bufferization, on functions of memrefs with one
    block each. Every returned buffer becomes a fresh allocation the caller
    owns, every other allocation is released after its last use, and each
    allocation, call result and `@__kina_check` call is followed by an early
    return (null result descriptors, temporaries freed) on failure.
  }];
  let dependentDialects = ["mlir::cf::ControlFlowDialect",
                           "mlir::LLVM::LLVMDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::linalg::LinalgDialect"];
}

def EntryPointsPass : Pass<"kina-entry-points", "mlir::ModuleOp"> {
  let summary = "Add the status entry kina_<fn> of each exported function";
  let description = [{
    For each exported function `@f` (public, with a body, carrying a Kina
    signature: kina/IRConventions.h) adds `func.func @kina_f(!llvm.ptr...)
    -> i32`, which checks the ABI version once per process, validates the
    caller's descriptors against the signature (static sizes, symbolic dims
    equal wherever the name appears, contiguity, null pointers), calls `@f`
    and stores the results or returns the runtime's status. Runs on the
    bufferized module after kina-buffer-ownership. Fails when a signature
    is malformed or `@kina_f` already exists.
  }];
  let options = [
    Option<"abiVersion", "abi-version", "int", "KINA_ABI_VERSION",
           "The Kina ABI version the entries check against the runtime's">,
    Option<"compiler", "compiler", "std::string", "\"kinac\"",
           "The compiler named in the object's version stamp">,
    Option<"gpu", "gpu", "bool", "false",
           "cuda: after the descriptor checks call kina_rt_gpu_enter, "
           "kina_rt_gpu_check_argument per argument (allocated pointer, null "
           "without elements; kina_rt_gpu_exit on failure), the function, "
           "then kina_rt_gpu_exit; their non-zero status is returned "
           "(results freed after a failed exit)">,
  ];
  let dependentDialects = ["mlir::cf::ControlFlowDialect",
                           "mlir::LLVM::LLVMDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::func::FuncDialect"];
}

def TensorDescEntryPointsPass
    : Pass<"kina-tensor-desc-entry-points", "mlir::ModuleOp"> {
  let summary = "Add the TensorDesc entry kinatd_<fn> of each exported function";
  let description = [{
    For each exported function `@f` (public, with a body, carrying a Kina
    signature) whose status entry `@kina_f` exists, adds `func.func
    @kinatd_f(!llvm.ptr..., i32, i64) -> i32`: the destination-passing
    entry over KinaTensorDesc descriptors (kina/abi.h), which calls the
    runtime's kina_rt_td_prepare, `@kina_f` and kina_rt_td_finish (with
    `gpu`: kina_rt_td_gpu_prepare and kina_rt_td_gpu_finish, which also
    take the device and stream arguments). Runs
    after kina-entry-points. Fails when `@kina_f` is missing, `@kinatd_f`
    already exists or an element type has no dtype code.
  }];
  let options = [
    Option<"supported", "supported", "bool", "true",
           "false: every entry returns -4 (not implemented for the target)">,
    Option<"gpu", "gpu", "bool", "false",
           "true: the cuda target's frame (kina_rt_td_gpu_prepare/finish "
           "with the caller's device and stream)">,
  ];
  let dependentDialects = ["mlir::cf::ControlFlowDialect",
                           "mlir::LLVM::LLVMDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::func::FuncDialect"];
}

def MatmulKernelPass : Pass<"kina-matmul-kernel", "mlir::ModuleOp"> {
  let summary = "Rewrite linalg.matmul on memrefs into a register-tiled, "
                "vectorised kernel";
  let description = [{
    Rewrites each `linalg.matmul` over row-major f32 or f64 memrefs into the
    register-tiled micro-kernel of BLIS/OpenBLAS with the vector dialect:
    panels of two vectors, then one vector, then one masked vector for the
    columns left; rows in tiles of 8 (512-bit vectors) or 4, then one at a
    time. Runs on the
    bufferized module before `convert-linalg-to-loops`, at -O1 and above.
    These are the defaults of the schedule space "cpu.matmul"
    (kina/Tuning.h); kinac passes tuned schedules per matmul
    (createMatmulKernelPass(tuning), docs/autotune.md).
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect",
                           "mlir::vector::VectorDialect",
                           "mlir::linalg::LinalgDialect"];
}

def FuseRowsPass : Pass<"kina-fuse-rows", "mlir::ModuleOp"> {
  let summary = "One loop over rows for row reductions and the ops that "
                "broadcast them back (cpu)";
  let description = [{
    Tiles each all-parallel linalg.generic that reads a row reduction's
    result broadcast along its innermost loop (softmax's division,
    layer_norm's normalisation) one row per iteration
    (scf::tileConsumerAndFuseProducersUsingSCF) and fuses into that loop
    the linalg producers whose row tile is part of their result (the row
    reductions, their fills, elementwise ops between); contractions and
    reductions along columns stay outside. The row loop is marked for the
    runtime's thread pool. On tensors before bufferization, at -O1 and
    above, cpu target: src/passes/FuseRows.cpp.
  }];
  let dependentDialects = ["mlir::scf::SCFDialect",
                           "mlir::tensor::TensorDialect",
                           "mlir::linalg::LinalgDialect"];
}

def ShareRowValuesPass : Pass<"kina-share-row-values", "mlir::ModuleOp"> {
  let summary = "One computation of a costly value that a row's reduction "
                "and its final op both compute (cpu)";
  let description = [{
    In a loop over rows of kina-fuse-rows, a row reduction summing a value
    v that contains a math op (softmax's exp(x - m)) and the final op
    computing the same v from the same inputs: v is computed once per
    element into the row of the final op's result, which the sum and the
    final op then read. On tensors after the last elementwise fusion, at
    -O1 and above, cpu target: src/passes/ShareRowValues.cpp.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect"];
}

def TileAndVectorizePass
    : Pass<"kina-tile-and-vectorize", "mlir::ModuleOp"> {
  let summary = "Tile linalg ops on buffers and vectorise the tiles with "
                "MLIR's transforms";
  let description = [{
    Tiles each linalg op on buffers (scf::tileUsingSCF) with the loop most
    operands access contiguously in tiles of one vector register
    (`vector-bits` / the widest element; halved, down to 128 bits, while a
    static loop is shorter) and every other loop in tiles of 1,
    peels the partial tile (left to convert-linalg-to-loops), vectorises the
    full tiles (linalg::vectorize), hoists each reduction's accumulator out
    of its loops into registers, widens row-reduction accumulators to
    vectors (one elementwise combine per step, one horizontal reduction per
    row) and lowers the vector ops with MLIR's vector lowering patterns.
    Ops with `linalg.index` payloads, convolution windows or element types
    that are not 8- to 64-bit integers or floats are left alone. On the
    bufferized module after kina-matmul-kernel and kina-entry-points, at -O1
    and above: src/passes/TileAndVectorize.cpp.
  }];
  let options = [
    Option<"vectorBits", "vector-bits", "unsigned", "128",
           "bits of one vector register of the target processor (128, 256 "
           "or 512)">
  ];
  let dependentDialects = ["mlir::affine::AffineDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect",
                           "mlir::vector::VectorDialect",
                           "mlir::linalg::LinalgDialect"];
}

def ExpandShapePass : Pass<"kina-expand-shape", "mlir::ModuleOp"> {
  let summary = "Rewrite memref.expand_shape of 1-D memrefs as "
                "reinterpret_cast";
  let description = [{
    Rewrites each `memref.expand_shape` of a rank-1, unit-stride memref as
    `memref.reinterpret_cast` of its base buffer with row-major strides, as
    `expand-strided-metadata` would: that pass crashes in MLIR 22 when one
    reassociation group holds several dynamic dims. Runs just before it. An
    MLIR 22 workaround: src/passes/workarounds/ExpandShape.cpp.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect"];
}

def MathApproximationPass
    : Pass<"kina-math-approximation", "mlir::ModuleOp"> {
  let summary = "Replace f32 math calls by MLIR's vectorisable polynomial "
                "approximations";
  let description = [{
    Rewrites each f32 (scalar or vector) `math` op named in `functions` with
    MLIR's polynomial approximation (`populateMathPolynomialApproximation
    Patterns`): straight-line arith code, which LLVM's loop vectoriser
    vectorises, instead of a libm call per element. The default list holds
    the functions whose approximation is within docs/tolerances.md, as
    measured by bench/cpu/math_ulp.py; the others keep their libm call.
    `powf` is kina's own rewrite (2^(y log2|x|) evaluated in f64, rounded
    once: 0.5 ulp), in the default list too. f64 ops are never rewritten. At -O1 and above, before the conversion of
    math to LLVM and libm.
  }];
  let options = [
    ListOption<"functions", "functions", "std::string",
               "math op mnemonics to approximate (default: the measured "
               "list in src/passes/MathApproximation.cpp)">
  ];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::math::MathDialect",
                           "mlir::vector::VectorDialect"];
}

def LowerToLLVMPass : Pass<"kina-lower-to-llvm", "mlir::ModuleOp"> {
  let summary = "Lower to the LLVM dialect with runtime allocation";
  let description = [{
    Lowers arith, math, cf, func, memref, vector, index and ub to the LLVM
    dialect in one full conversion; every `memref.alloc` becomes a call of
    the runtime's unranked allocation function `alloc-function` and every
    `memref.dealloc` a call of `runtime_free`.
  }];
  let options = [
    Option<"allocFunction", "alloc-function", "std::string",
           "\"_mlir_ciface_runtime_host_alloc_unranked\"",
           "The runtime function allocations call (the cpu target's host "
           "allocator by default)">,
  ];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

def ParallelCallsPass : Pass<"kina-parallel-calls", "mlir::ModuleOp"> {
  let summary = "Run outlined parallel loops on the runtime's thread pool";
  let description = [{
    On the LLVM-dialect module: each `llvm.func` marked
    `kina.parallel_body` (a loop outlined by kina-tile-and-vectorize or
    kina-matmul-kernel, src/passes/Parallel.cpp; arguments: first and end
    iteration, cost, captured values) becomes internal and gets an internal
    task `<name>_task(ptr ctx, i64 lo, i64 hi)` that loads the captured
    values from `ctx` and calls it; each call `body(0, n, cost, values...)`
    becomes: the values stored in a stack struct, then
    `kina_rt_parallel_for(n, cost, task, &struct)` (libkina_runtime.a,
    runtime/Parallel.cpp), which splits [0, n) across threads or runs it on
    the caller when the work is small. The cpu target's last pass at -O1
    and above.
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

def InternalizePass : Pass<"kina-internalize", "mlir::ModuleOp"> {
  let summary = "Give the implementation functions internal linkage";
  let description = [{
    Renames each Kina function's LLVM implementation `@f` (an `llvm.func`
    carrying a Kina signature that is not the C-interface wrapper of one) to
    `__kina_fn_f` with internal linkage, so only `kina_f` and
    `_mlir_ciface_f` are exported, and removes the signature attributes from
    every function. Runs last, on the LLVM-dialect module.
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

#endif // KINA_PASSES_TD
