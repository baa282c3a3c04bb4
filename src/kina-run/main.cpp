//===- main.cpp - kina-run: call a function of a kinac shared library -----===//
//
// `kina-run model.so forward --in x.npy --in w.npy --out y.npy` loads a
// library written by `kinac --emit=shared` (SharedModule.h), finds `@forward`
// in its manifest, reads one NPY file per argument (Npy.h) and checks it
// against the manifest (element type: status 6, Type Error; rank: status 1),
// builds row-major descriptors over the file data (for a library whose
// manifest says "target": "cuda", over copies of it in CUDA managed memory
// allocated through the library's own runtime, freed after the call; results
// are managed memory the host reads directly), calls the status entry
// `kina_forward` (which checks every dim itself), writes each result to its
// `--out` file as NPY, frees the results with the library's runtime_free,
// and exits with the entry's status (its kina_last_error() message on
// stderr when it fails). `kina-run model.so --manifest` prints the embedded
// manifest. Every other failure (command line, a file that cannot be read or
// is not a C-order little-endian NPY file, a wrong number of inputs or
// outputs, a library that does not load) prints `kina-run: error: ...`
// naming the file and exits 1. Element types travel as NumPy stores them:
// bf16 as `<u2` with the raw bits (ml_dtypes' and PyTorch's convention), i1
// as `|b1`, i8 as `|i1`.
//
// `kina-run model.so forward --bench --shape N=1797` calls the function on
// random inputs instead (Bench.h: the manifest's dims with the symbolic ones
// bound by --shape; floats in [0.5, 1] with a random sign, never zero),
// --warmup untimed calls then --repeat timed ones (at most --max-seconds),
// freeing the results after each, and prints one JSON line on stdout:
// {"function": ..., "median_s": ..., "min_s": ..., "runs": ...}, times in
// seconds of wall clock. `kinac --autotune` measures its candidates so.
//
// `kina-run --tune-plan DIR/plan.json` measures the candidates of a cuda
// tuning plan that kinac built elsewhere and writes DIR/results.json;
// `kina-run --gpu-info` prints the GPU (TunePlan.h, docs/autotune.md).
//
//===----------------------------------------------------------------------===//
#include "Bench.h"
#include "Npy.h"
#include "SharedModule.h"
#include "TunePlan.h"

#include "kina/abi.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#ifndef KINA_VERSION
#define KINA_VERSION "0.0.0"
#endif

namespace {

using namespace kina;

struct Options {
  std::string library;
  std::string function;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  bool printManifest = false;
  bool checkLeaks = false;
  bool verbose = false;
  /// --bench: random inputs, timed calls (Bench.h).
  bool bench = false;
  std::vector<std::string> shapes;
  int warmup = 2;
  int repeat = 9;
  double maxSeconds = 0;
  uint64_t seed = 1;
};

void error(const std::string &message) {
  std::cerr << "kina-run: error: " << message << "\n";
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

/// The words of a ranked memref descriptor (abi.h, KinaMemRef<rank>):
/// allocated, aligned, offset, sizes[rank], strides[rank].
class Descriptor {
public:
  explicit Descriptor(size_t rank) : rank(rank), words(3 + 2 * rank, 0) {}

  /// A row-major view of `data` with `shape` (offset 0).
  static Descriptor over(void *data, const std::vector<int64_t> &shape) {
    Descriptor d(shape.size());
    d.setPointer(0, data);
    d.setPointer(1, data);
    int64_t stride = 1;
    for (size_t i = shape.size(); i-- > 0;) {
      d.words[3 + i] = shape[i];
      d.words[3 + d.rank + i] = stride;
      stride *= shape[i];
    }
    return d;
  }
  void *address() { return words.data(); }
  void *allocated() const { return pointer(0); }
  void *aligned() const { return pointer(1); }
  int64_t offset() const { return words[2]; }
  int64_t size(size_t i) const { return words[3 + i]; }
  int64_t stride(size_t i) const { return words[3 + rank + i]; }
  std::vector<int64_t> shape() const {
    return std::vector<int64_t>(words.begin() + 3, words.begin() + 3 + rank);
  }

private:
  size_t rank;
  std::vector<int64_t> words;
  void setPointer(size_t i, void *p) { std::memcpy(&words[i], &p, 8); }
  void *pointer(size_t i) const {
    void *p;
    std::memcpy(&p, &words[i], 8);
    return p;
  }
};

/// The elements of a result descriptor in C order (walking its strides).
std::vector<char> gather(const Descriptor &d, size_t rank, size_t elementSize) {
  std::vector<int64_t> shape = d.shape();
  int64_t count = 1;
  for (int64_t s : shape)
    count *= s;
  std::vector<char> out(static_cast<size_t>(count) * elementSize);
  if (count == 0)
    return out;
  const char *base = static_cast<const char *>(d.aligned()) +
                     d.offset() * static_cast<int64_t>(elementSize);
  std::vector<int64_t> index(rank, 0);
  for (int64_t n = 0; n < count; ++n) {
    int64_t at = 0;
    for (size_t i = 0; i < rank; ++i)
      at += index[i] * d.stride(i);
    std::memcpy(&out[static_cast<size_t>(n) * elementSize],
                base + at * static_cast<int64_t>(elementSize), elementSize);
    for (size_t i = rank; i-- > 0;) {
      if (++index[i] < shape[i])
        break;
      index[i] = 0;
    }
  }
  return out;
}

int runKinaRun(const Options &opts) {
  run::SharedModule module;
  if (std::string why = module.open(opts.library); !why.empty()) {
    error(opts.library + ": " + why);
    return KINA_STATUS_VALIDATION_ERROR;
  }
  const run::Manifest &manifest = module.manifest();
  if (opts.printManifest) {
    std::cout << manifest.text;
    if (!manifest.text.empty() && manifest.text.back() != '\n')
      std::cout << "\n";
    return std::cout.flush() ? 0 : KINA_STATUS_VALIDATION_ERROR;
  }
  if (opts.function.empty()) {
    error("no function given (or --manifest)");
    return KINA_STATUS_VALIDATION_ERROR;
  }
  const run::FunctionSignature *fn = manifest.lookup(opts.function);
  if (!fn) {
    std::string names;
    for (const run::FunctionSignature &f : manifest.functions)
      names += (names.empty() ? "@" : ", @") + f.name;
    error(opts.library + ": module @" + manifest.module +
          " exports no function @" + opts.function + " (it exports " +
          (names.empty() ? "none" : names) + ")");
    return KINA_STATUS_VALIDATION_ERROR;
  }
  std::string where = "@" + fn->name;
  run::DimBindings bindings;
  for (const std::string &text : opts.shapes)
    if (std::string why = run::parseDimBindings(text, bindings); !why.empty()) {
      error(why);
      return KINA_STATUS_VALIDATION_ERROR;
    }
  if (opts.bench && (!opts.inputs.empty() || !opts.outputs.empty())) {
    error("--bench makes its own inputs and writes no results: no --in or "
          "--out");
    return KINA_STATUS_VALIDATION_ERROR;
  }
  if (!opts.bench && opts.inputs.size() != fn->arguments.size()) {
    error(where + " takes " + std::to_string(fn->arguments.size()) +
          " arguments, got " + std::to_string(opts.inputs.size()) +
          " --in files");
    return KINA_STATUS_VALIDATION_ERROR;
  }
  if (!opts.bench && opts.outputs.size() != fn->results.size()) {
    error(where + " returns " + std::to_string(fn->results.size()) +
          " results, got " + std::to_string(opts.outputs.size()) +
          " --out files");
    return KINA_STATUS_VALIDATION_ERROR;
  }
  if (fn->arguments.size() + fn->results.size() > run::kMaxEntryPointers) {
    error(where + " has more than " + std::to_string(run::kMaxEntryPointers) +
          " arguments and results together, more than kina-run can pass");
    return KINA_STATUS_UNIMPLEMENTED_ERROR;
  }

  // Inputs: read, then check element type and rank against the manifest;
  // or, for --bench, made up at the bound shapes.
  std::vector<npy::NpyArray> arrays(fn->arguments.size());
  std::vector<Descriptor> descriptors;
  uint64_t state = opts.seed;
  for (size_t i = 0; opts.bench && i < fn->arguments.size(); ++i) {
    const run::TensorSignature &arg = fn->arguments[i];
    std::vector<int64_t> shape;
    if (std::string why = run::bindShape(arg, bindings, shape); !why.empty()) {
      error(where + ": " + why);
      return KINA_STATUS_VALIDATION_ERROR;
    }
    run::fillRandom(arg.element, shape, state, arrays[i]);
    descriptors.push_back(Descriptor::over(arrays[i].data.data(), shape));
  }
  for (size_t i = 0; !opts.bench && i < fn->arguments.size(); ++i) {
    const run::TensorSignature &arg = fn->arguments[i];
    const std::string &path = opts.inputs[i];
    npy::ReadResult read;
    try {
      read = npy::readNpyFile(path, arrays[i]);
    } catch (const std::bad_alloc &) {
      error(path + ": out of memory reading the array");
      return KINA_STATUS_RESOURCE_ERROR;
    }
    if (!read.ok()) {
      error(path + ": " + read.error);
      return KINA_STATUS_VALIDATION_ERROR;
    }
    const npy::NpyArray &a = arrays[i];
    if (a.descr != arg.element.descr) {
      error(path + ": argument %" + arg.name + " of " + where + " is " +
            arg.typeString() + ", which expects dtype '" + arg.element.descr +
            "' (" + npy::dtypeName(arg.element.descr) +
            "), but the file holds '" + a.descr + "' (" +
            npy::dtypeName(a.descr) + ")");
      return KINA_STATUS_TYPE_ERROR;
    }
    if (static_cast<int64_t>(a.shape.size()) != arg.rank) {
      error(path + ": argument %" + arg.name + " of " + where + " is " +
            arg.typeString() + " (rank " + std::to_string(arg.rank) +
            "), but the file holds shape " + shapeString(a.shape) + " (rank " +
            std::to_string(a.shape.size()) + ")");
      return KINA_STATUS_VALIDATION_ERROR;
    }
    descriptors.push_back(Descriptor::over(arrays[i].data.data(), a.shape));
  }

  // --target=cuda: the arguments go to CUDA managed memory, allocated by the
  // library's runtime (so its registry and device selection apply).
  std::vector<void *> deviceInputs;
  // A failed call of the entry: its status and the runtime's message on
  // stderr; the exit code is the status where it fits in one (1-255).
  auto entryFailed = [&](int32_t status) {
    std::string message = module.lastError();
    error(fn->entry + " returned " + std::to_string(status) + " (" +
          module.statusName(status) + ")" +
          (message.empty() ? "" : ": " + message));
    return status > 0 && status < 256 ? int(status)
                                      : int(KINA_STATUS_INTERNAL_ERROR);
  };
  auto freeDeviceInputs = [&] {
    for (void *p : deviceInputs)
      module.runtimeFree(p);
    deviceInputs.clear();
  };
  if (manifest.target == "cuda") {
    for (size_t i = 0; i < descriptors.size(); ++i) {
      const npy::NpyArray &a = arrays[i];
      const run::TensorSignature &arg = fn->arguments[i];
      // The sizes in a descriptor; the runtime writes pointers and strides.
      Descriptor managed = Descriptor::over(nullptr, a.shape);
      struct {
        int64_t rank;
        void *descriptor;
      } unranked{static_cast<int64_t>(a.shape.size()), managed.address()};
      int32_t status =
          module.gpuAllocate(&unranked, static_cast<int32_t>(arg.element.size));
      if (status != KINA_STATUS_SUCCESS) {
        error("cannot allocate CUDA managed memory for argument %" + arg.name +
              " of " + where + ": " + module.lastError());
        freeDeviceInputs();
        return status;
      }
      deviceInputs.push_back(managed.allocated());
      if (a.data.size() != 0)
        std::memcpy(managed.aligned(), a.data.data(), a.data.size());
      descriptors[i] = managed;
    }
  }

  void *entry = module.symbol(fn->entry);
  if (!entry) {
    error(opts.library + ": the manifest names the entry " + fn->entry +
          ", which the library does not define");
    freeDeviceInputs();
    return KINA_STATUS_VALIDATION_ERROR;
  }
  std::vector<Descriptor> results;
  for (const run::TensorSignature &r : fn->results)
    results.emplace_back(static_cast<size_t>(r.rank));
  std::vector<void *> pointers;
  for (Descriptor &r : results)
    pointers.push_back(r.address());
  for (Descriptor &d : descriptors)
    pointers.push_back(d.address());

  // Every distinct result buffer, freed once.
  auto freeResults = [&] {
    std::set<void *> freed;
    for (const Descriptor &d : results)
      if (d.allocated() && freed.insert(d.allocated()).second)
        module.runtimeFree(d.allocated());
  };
  if (opts.bench) {
    std::vector<double> times;
    int32_t status = run::timeCalls(
        [&] {
          int32_t s = module.callEntry(entry, pointers);
          if (s == KINA_STATUS_SUCCESS)
            freeResults();
          return s;
        },
        opts.warmup, opts.repeat, opts.maxSeconds, times);
    freeDeviceInputs();
    if (status != KINA_STATUS_SUCCESS)
      return entryFailed(status);
    double best = *std::min_element(times.begin(), times.end());
    std::printf("{\"function\": \"%s\", \"median_s\": %.9g, \"min_s\": "
                "%.9g, \"runs\": %zu}\n",
                fn->name.c_str(), run::median(times), best, times.size());
    return std::fflush(stdout) == 0 ? 0 : KINA_STATUS_VALIDATION_ERROR;
  }

  int32_t status = module.callEntry(entry, pointers);
  freeDeviceInputs();
  if (status != KINA_STATUS_SUCCESS)
    return entryFailed(status);

  // Results: write each, then free every distinct buffer once.
  int rc = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    const run::TensorSignature &sig = fn->results[i];
    const Descriptor &d = results[i];
    std::vector<int64_t> shape = d.shape();
    std::vector<char> bytes =
        gather(d, static_cast<size_t>(sig.rank), sig.element.size);
    std::string why = npy::writeNpyFile(opts.outputs[i], sig.element.descr,
                                        shape, bytes.data(), bytes.size());
    if (!why.empty()) {
      error(opts.outputs[i] + ": cannot write: " + why);
      rc = KINA_STATUS_VALIDATION_ERROR;
      continue;
    }
    if (opts.verbose)
      std::cerr << "kina-run: result " << i << " (" << sig.typeString()
                << ") -> " << opts.outputs[i] << ": '" << sig.element.descr
                << "' " << shapeString(shape) << "\n";
  }
  freeResults();
  if (opts.checkLeaks && rc == 0) {
    int64_t live = module.liveBufferCount();
    if (live != 0) {
      error(std::to_string(live) + " runtime buffers are still live after " +
            fn->entry + " returned and its results were freed");
      rc = KINA_STATUS_INTERNAL_ERROR;
    }
  }
  return rc;
}

} // namespace

int main(int argc, char **argv) {
  Options opts;
  CLI::App app{"kina-run: call a function of a library built by kinac "
               "--emit=shared on NPY files (version " KINA_VERSION ")",
               "kina-run"};
  std::string tunePlan;
  double tuneBudget = 0;
  bool gpuInfo = false;
  CLI::Option *libraryOption =
      app.add_option("library", opts.library, "The shared library (.so)");
  app.add_option("--tune-plan", tunePlan,
                 "Measure every candidate of a plan written by kinac "
                 "--autotune-plan (each in a kina-run process) and write "
                 "results.json beside it (docs/autotune.md)");
  app.add_option("--budget", tuneBudget,
                 "--tune-plan: stop measuring non-default candidates after "
                 "this many seconds (overrides the plan's budget_s, which "
                 "kinac --autotune-budget sets; 0: the plan's)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--gpu-info", gpuInfo,
               "Print the CUDA GPU kina-run would run on as one JSON line "
               "(status 1 without one)");
  app.add_option("function", opts.function,
                 "The exported function to call (its Kina name)");
  app.add_option("--in", opts.inputs,
                 "An argument as an NPY file, in the function's order "
                 "(repeat for each)")
      ->allow_extra_args(false);
  app.add_option("--out", opts.outputs,
                 "Where to write a result as NPY, in order (repeat for each)")
      ->allow_extra_args(false);
  app.add_flag("--manifest", opts.printManifest,
               "Print the library's JSON manifest and exit");
  app.add_flag("--check-leaks", opts.checkLeaks,
               "Fail (status 5) if runtime buffers remain after the results "
               "are freed");
  app.add_flag("--bench", opts.bench,
               "Call the function on random inputs (floats in [0.5, 1] with "
               "a random sign) and print the median and minimum wall time "
               "of the timed calls as one JSON line");
  app.add_option("--shape", opts.shapes,
                 "--bench: sizes of the symbolic dims, NAME=SIZE[,...] "
                 "(repeatable)")
      ->allow_extra_args(false);
  app.add_option("--warmup", opts.warmup, "--bench: untimed calls first")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--repeat", opts.repeat, "--bench: timed calls (at most)")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-seconds", opts.maxSeconds,
                 "--bench: stop the timed calls after this many seconds "
                 "(at least one runs; 0: no limit)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--seed", opts.seed, "--bench: seed of the random inputs");
  app.add_flag("-v,--verbose", opts.verbose,
               "Print each result's file, dtype and shape");
  app.footer("Exit status: the entry's status (0 success, 1 validation, 2 "
             "resource, ...);\n6 when an input's dtype does not match the "
             "manifest; 1 for any other error.\nbf16 travels as '<u2' (raw "
             "bits), i1 as '|b1'.");
  app.set_version_flag("--version", "kina-run version " KINA_VERSION);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp &e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion &e) {
    return app.exit(e);
  } catch (const CLI::ParseError &e) {
    error(e.what());
    std::cerr << "Run with --help for more information.\n";
    return KINA_STATUS_VALIDATION_ERROR;
  }
  if (gpuInfo || !tunePlan.empty()) {
    if (!opts.library.empty()) {
      error("--gpu-info and --tune-plan take no library");
      return 1;
    }
    if (gpuInfo)
      return run::printGpuInfo();
    return run::runTunePlan(tunePlan, "/proc/self/exe", tuneBudget);
  }
  if (!libraryOption->count()) {
    error("library is required");
    std::cerr << "Run with --help for more information.\n";
    return KINA_STATUS_VALIDATION_ERROR;
  }
  try {
    return runKinaRun(opts);
  } catch (const std::bad_alloc &) {
    error("out of memory");
    return KINA_STATUS_RESOURCE_ERROR;
  } catch (const std::exception &e) {
    error(std::string("internal error: ") + e.what());
    return KINA_STATUS_INTERNAL_ERROR;
  }
}
