//===- TunePlan.h - kina-run --gpu-info and --tune-plan -------------------===//
//
// The measuring half of kinac's cuda autotuning (docs/autotune.md, "The
// plan route"): kinac builds the candidates of a module (shared libraries
// and DIR/plan.json, `kinac --autotune-plan DIR`) on a machine with LLVM;
// `kina-run --tune-plan DIR/plan.json` measures them on the machine with
// the GPU (no LLVM needed) and writes DIR/results.json, which
// `kinac --tuning-results` imports. `kina-run --gpu-info` prints the GPU
// the measurements would run on.
//
//===----------------------------------------------------------------------===//
#ifndef KINA_RUN_TUNEPLAN_H
#define KINA_RUN_TUNEPLAN_H

#include <string>

namespace kina {
namespace run {

/// The CUDA device kina-run measures on: its ordinal ($KINA_DEVICE, else
/// 0), name (cuDeviceGetName, e.g. "NVIDIA H200") and architecture
/// ("sm_90", from the compute capability).
struct GpuInfo {
  int ordinal = 0;
  std::string name;
  std::string arch;
};

/// Queries the device through the CUDA driver (libcuda.so.1, loaded with
/// dlopen). Returns false with `why` set when there is no driver or no
/// such device.
bool queryGpu(GpuInfo &info, std::string &why);

/// `kina-run --gpu-info`: prints {"device": ..., "name": ..., "arch": ...}
/// on stdout and returns 0, or prints `kina-run: error: no CUDA GPU: ...`
/// and returns 1.
int printGpuInfo();

/// `kina-run --tune-plan PLAN`: measures the candidates of the plan, each
/// in a kina-run process of its own (`kina-run LIB FN --bench --shape ...
/// --warmup W --repeat R`, so a candidate that crashes ends only its
/// process and is reported as failed), and writes `results.json` beside
/// the plan after every candidate (a temporary file renamed over it, so a
/// run cut short keeps what it measured): the plan's ops and candidates
/// with each candidate's median seconds or error, and the GPU.
/// Every op's default candidate is measured first, then the others in the
/// plan's order while the budget lasts: `budgetSeconds` when positive,
/// else the plan's `budget_s` (kinac --autotune-budget's seconds left
/// after building), else no limit; a candidate the budget did not reach is
/// recorded as {"candidate": i, "skipped": "budget"}. Progress on stderr,
/// one line per candidate with its op's best median so far. `self` is the
/// path of this kina-run (argv[0] resolved). Returns the exit status: 0,
/// or 1 (no GPU, a malformed plan, results not writable) with a message
/// on stderr.
int runTunePlan(const std::string &planPath, const std::string &self,
                double budgetSeconds = 0);

} // namespace run
} // namespace kina

#endif // KINA_RUN_TUNEPLAN_H
