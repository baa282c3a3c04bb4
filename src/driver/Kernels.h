//===- Kernels.h - The kernels a compilation produced, for dot and stats --===//
//
// Private to the kina_driver library. What `--emit=dot` draws and `--stats`
// counts: for each Kina function, the kernels the target's pipeline
// actually produced, each traced back to the Kina statements it computes
// through MLIR locations (KernelAnalysis.cpp), with its roofline figures
// (FLOPs, bytes moved) and, for cuda, ptxas's resource usage (Stats.cpp).
// KernelProbe watches the pipeline as it runs (a PassInstrumentation) and
// records the kernels at the point where each is one op: on the cpu target
// after `kina-entry-points` (the bufferized module: each linalg op or
// `memref.copy` then becomes one loop nest), on the cuda target before
// `kina-gpu-map-row-chains`, the first mapper (the same ops, each mapped
// to one `gpu.launch` or a fused run to one) and after
// `gpu-kernel-outlining` (the `gpu.func` each launch calls).
// DotEmitter.cpp draws the report with the AST; Stats.cpp prints it.
//
//===----------------------------------------------------------------------===//
#ifndef KINA_DRIVER_KERNELS_H
#define KINA_DRIVER_KERNELS_H

#include "kina/AST.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Location.h"
#include "mlir/Pass/PassInstrumentation.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace kina {
namespace driver {

/// A position in the compiled `.kir` file: (line, column), both 1-based, as
/// MLIRGen's FileLineColLoc of a statement or parameter records it.
using SourcePoint = std::pair<unsigned, unsigned>;

/// The sizes of symbolic dims (`N=1797`), from `--stats-shape`; kernels
/// whose sizes depend on a dim not given here have no figures.
using ShapeBindings = std::map<std::string, int64_t>;

/// Parses `NAME=VALUE[,NAME=VALUE...]` (VALUE a non-negative integer) into
/// `bindings`; an error names `option` and the malformed item.
llvm::Error parseShapeBindings(llvm::StringRef text, ShapeBindings &bindings,
                               llvm::StringRef option = "--stats-shape");

/// One kernel: a loop nest on the cpu, a `gpu.func` launch on cuda.
struct KernelInfo {
  /// cuda: the kernel's symbol, `@module::@func` as gpu.launch_func names
  /// it; cpu: empty (a loop nest has no symbol).
  std::string name;
  /// The op the kernel comes from: `linalg.generic`, `linalg.matmul`,
  /// `linalg.fill`, `memref.copy`, ... (on cuda after
  /// linalg-generalize-named-ops, so always `linalg.generic` or copy).
  std::string op;
  /// The Kina statements (and parameters) whose locations the kernel's ops
  /// carry: the op's own location and those of every op in its body (the
  /// payloads fused into it keep their statements' locations).
  std::set<SourcePoint> sources;
  /// Points of the iteration space (the product of the loop ranges), FLOPs
  /// (iterations x floating-point ops of the payload: each arith/math op on
  /// floats one, fma two) and bytes moved (every operand buffer read once,
  /// every output written once; an output whose old value the payload uses
  /// is read too): std::nullopt where a size is dynamic and not bound by
  /// --stats-shape.
  std::optional<int64_t> iterations, flops, bytesRead, bytesWritten;
  /// Floating-point ops per iteration point (from the payload).
  unsigned flopsPerPoint = 0;
  /// Loops of the iteration space (its rank): 0 for an op on rank-0
  /// tensors, which lowers to straight-line code, not a loop nest.
  unsigned loops = 0;
  /// cuda: the index (in its function's list) of the kernel this one is
  /// the alternative of: a scalar twin that the host launches instead of
  /// that vector kernel when a buffer is not 16-byte aligned (the launch
  /// in the else branch of the scf.if whose then branch launches the
  /// other). One of the two runs per call: kernel counts and totals leave
  /// alternatives out. std::nullopt for every other kernel.
  std::optional<size_t> alternativeOf;
  /// cuda: the kernel runs only when the runtime declines a library call
  /// (a contraction cuBLASLt cannot take: the launches in the branch
  /// taken when `kina_rt_gpu_matmul` returns 0, docs/cuda.md "Matmul").
  /// Not counted as a launched kernel; its figures stand for the call's.
  bool libraryFallback = false;
  /// cuda, from `ptxas -v` on the kernel's PTX: registers per thread,
  /// static shared memory, local memory (spills and stack) per thread, in
  /// bytes; std::nullopt when the pipeline did not assemble the kernels.
  std::optional<unsigned> registers, sharedBytes, localBytes;
};

/// A Kina statement as the stats name it: its op (`call @f` for a call)
/// and result names (without `%`).
struct StatementInfo {
  std::string op;
  std::vector<std::string> results;
};

/// The kernels of one Kina function, in program order.
struct FunctionKernels {
  /// The function's symbol in the IR (with --symbol-prefix).
  std::string name;
  std::vector<KernelInfo> kernels;
  /// Buffers the function allocates that it does not return
  /// (intermediates): how many, and their total size in bytes
  /// (std::nullopt if one's size is unknown).
  /// cuda: calls of the runtime's library routes (`kina_rt_gpu_matmul`:
  /// cuBLASLt), each one or more kernels of the library.
  unsigned libraryCalls = 0;
  unsigned intermediateBuffers = 0;
  std::optional<int64_t> intermediateBytes = 0;
  /// The function's statements by location (from the AST, describeStatements).
  std::map<SourcePoint, StatementInfo> statements;
};

/// Everything KernelProbe recorded for one module.
struct KernelReport {
  /// The --target whose pipeline ran ("cpu", "cuda").
  std::string target;
  std::vector<FunctionKernels> functions;
  /// Whether the pipeline reached the point where kernels are recorded.
  bool complete = false;
  /// cuda: whether ptxas's figures are filled in.
  bool resourceUsage = false;
  /// The kernels of the function whose IR symbol is `fn`, or nullptr.
  const FunctionKernels *lookup(llvm::StringRef fn) const {
    for (const FunctionKernels &f : functions)
      if (f.name == fn)
        return &f;
    return nullptr;
  }
};

/// Watches a target's pipeline and fills a KernelReport (see the file
/// comment for the points it records at). `file` is the compiled `.kir`
/// file's name as its locations spell it; only locations in it count.
class KernelProbe : public mlir::PassInstrumentation {
public:
  KernelProbe(KernelReport &report, std::string file, ShapeBindings shapes)
      : report(report), file(std::move(file)), shapes(std::move(shapes)) {}
  void runBeforePass(mlir::Pass *pass, mlir::Operation *op) override;
  void runAfterPass(mlir::Pass *pass, mlir::Operation *op) override;

private:
  KernelReport &report;
  std::string file;
  ShapeBindings shapes;
  /// cuda: the linalg-level kernels, matched to the launches afterwards.
  std::vector<FunctionKernels> linalgLevel;
  /// cuda: linalgLevel was taken (before the first mapper that ran).
  bool linalgLevelTaken = false;
  /// cuda: per function, the location of each linalg-level kernel's op.
  std::vector<std::vector<std::optional<SourcePoint>>> anchors;
};

/// The Graphviz graph of `module`'s functions (the checked AST: one node
/// per statement, parameter and result) with `report`'s kernels as
/// clusters. `symbolPrefix` (--symbol-prefix) maps a Kina function's name
/// to its IR symbol. Deterministic: the same input gives the same bytes.
std::string emitDot(const Module &module, const KernelReport &report,
                    llvm::StringRef symbolPrefix);

/// Fills each function's `statements` of `report` from the checked AST
/// (`symbolPrefix` maps a Kina function name to its IR symbol).
void describeStatements(KernelReport &report, const Module &module,
                        llvm::StringRef symbolPrefix);

/// Fills each kernel's registers, shared memory and stack frame (bytes) in
/// `report` from `ptxas -v -arch=<gpuArch>` run on each kernel module's PTX
/// (`ptxByModule`: gpu.module name, PTX text). `run(args, ptx)` runs ptxas
/// with `args` (args[0] its display name) on the PTX and returns its
/// report (stdout and stderr), or an error, which is returned.
llvm::Error addPtxasResourceUsage(
    KernelReport &report,
    const std::vector<std::pair<std::string, std::string>> &ptxByModule,
    llvm::StringRef gpuArch,
    const std::function<llvm::Expected<std::string>(
        const std::vector<std::string> &, llvm::StringRef ptx)> &run);

/// The `--stats` text: per function its kernels (sources, FLOPs, bytes,
/// intensity; cuda: registers, shared memory), the intermediates, then the
/// stage times (name, milliseconds).
std::string
formatStatsText(const KernelReport &report,
                const std::vector<std::pair<std::string, double>> &stageTimes);

/// The `--stats=json` document (docs/inspecting.md, schema version 1):
/// `input` the .kir file as given, `shapes` --stats-shape's bindings.
std::string
formatStatsJson(const KernelReport &report, llvm::StringRef input,
                const std::vector<std::pair<std::string, double>> &stageTimes,
                const ShapeBindings &shapes);

} // namespace driver
} // namespace kina

#endif // KINA_DRIVER_KERNELS_H
