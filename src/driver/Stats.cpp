//===- Stats.cpp - `--stats`: kernels, roofline figures, stage times ------===//
//
// Prints a KernelReport (Kernels.h) as `--stats` text or as the
// `--stats=json` document (schema in docs/inspecting.md, built with
// nlohmann/json's ordered_json so keys keep the documented order), and fills
// the cuda kernels' resource usage from `ptxas -v` run on their PTX: the
// same PTX and the same ptxas (`--cuda-path`) and architecture as the
// fatbin that gpu-module-to-binary embeds.
//
//===----------------------------------------------------------------------===//
#include "Kernels.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

namespace kina {
namespace driver {

using Json = nlohmann::ordered_json;

void describeStatements(KernelReport &report, const Module &module,
                        llvm::StringRef symbolPrefix) {
  for (const Function &fn : module.functions) {
    for (FunctionKernels &f : report.functions) {
      if (f.name != symbolPrefix.str() + fn.name)
        continue;
      for (const Statement &s : fn.body) {
        auto flc = llvm::dyn_cast<mlir::FileLineColLoc>(s.loc);
        if (!flc)
          continue;
        StatementInfo info;
        info.op = s.op == "call" ? "call @" + s.callee : s.op;
        info.results = s.results;
        f.statements[{flc.getLine(), flc.getColumn()}] = std::move(info);
      }
    }
  }
}

llvm::Error addPtxasResourceUsage(
    KernelReport &report,
    const std::vector<std::pair<std::string, std::string>> &ptxByModule,
    llvm::StringRef gpuArch,
    const std::function<llvm::Expected<std::string>(
        const std::vector<std::string> &, llvm::StringRef ptx)> &run) {
  // ptxas -v prints, per entry function:
  //   ptxas info    : Compiling entry function 'NAME' for 'sm_90'
  //   ptxas info    : Function properties for NAME
  //       S bytes stack frame, ...
  //   ptxas info    : Used R registers, ... B bytes smem, ...
  struct Usage {
    std::optional<unsigned> registers, shared, stack;
  };
  std::map<std::string, Usage> usage; // "@module::@func" -> usage
  llvm::Regex entry("Compiling entry function '([^']+)'");
  llvm::Regex registers("Used ([0-9]+) registers");
  llvm::Regex smem("([0-9]+) bytes smem");
  llvm::Regex stack("([0-9]+) bytes stack frame");
  for (const auto &[module, ptx] : ptxByModule) {
    llvm::Expected<std::string> out =
        run({"ptxas", "-v", "-arch=" + gpuArch.str()}, ptx);
    if (!out)
      return out.takeError();
    std::string current;
    llvm::SmallVector<llvm::StringRef> lines;
    llvm::StringRef(*out).split(lines, '\n');
    llvm::SmallVector<llvm::StringRef, 3> m;
    auto number = [](llvm::StringRef s) {
      unsigned v = 0;
      (void)s.getAsInteger(10, v);
      return v;
    };
    for (llvm::StringRef line : lines) {
      if (entry.match(line, &m)) {
        current = "@" + module + "::@" + m[1].str();
        usage[current];
        continue;
      }
      if (current.empty())
        continue;
      if (registers.match(line, &m))
        usage[current].registers = number(m[1]);
      if (smem.match(line, &m))
        usage[current].shared = number(m[1]);
      if (stack.match(line, &m))
        usage[current].stack = number(m[1]);
    }
  }
  for (FunctionKernels &f : report.functions)
    for (KernelInfo &k : f.kernels) {
      auto it = usage.find(k.name);
      if (it == usage.end())
        continue;
      k.registers = it->second.registers;
      k.sharedBytes = it->second.shared.value_or(0);
      k.localBytes = it->second.stack.value_or(0);
    }
  report.resourceUsage = true;
  return llvm::Error::success();
}

namespace {

/// `line:col op %r` for each statement a kernel computes, in source order.
std::vector<std::string> statementsOf(const FunctionKernels &f,
                                      const KernelInfo &k) {
  std::vector<std::string> out;
  for (const SourcePoint &point : k.sources) {
    auto it = f.statements.find(point);
    if (it == f.statements.end())
      continue;
    std::string s = std::to_string(point.first) + ":" + it->second.op;
    out.push_back(s);
  }
  return out;
}

/// The kernels of `f` a call launches: all but the scalar twins (each
/// runs instead of its vector kernel) and the fallbacks of library calls
/// (each runs only when the runtime declines the call).
size_t launchedKernels(const FunctionKernels &f) {
  return llvm::count_if(f.kernels, [](const KernelInfo &k) {
    return !k.alternativeOf && !k.libraryFallback;
  });
}

std::string orUnknown(std::optional<int64_t> v) {
  return v ? std::to_string(*v) : "?";
}

Json orNull(std::optional<int64_t> v) { return v ? Json(*v) : Json(nullptr); }

} // namespace

std::string
formatStatsText(const KernelReport &report,
                const std::vector<std::pair<std::string, double>> &stageTimes) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "kinac: stats (target " << report.target << ")\n";
  for (const FunctionKernels &f : report.functions) {
    size_t launched = launchedKernels(f);
    size_t twins = llvm::count_if(
        f.kernels, [](const KernelInfo &k) { return k.alternativeOf; });
    size_t fallbacks = f.kernels.size() - launched - twins;
    os << "function @" << f.name << ": " << launched
       << (launched == 1 ? " kernel" : " kernels");
    if (f.libraryCalls)
      os << " and " << f.libraryCalls << " cuBLASLt call"
         << (f.libraryCalls == 1 ? "" : "s");
    std::vector<std::string> extra;
    if (twins)
      extra.push_back(std::to_string(twins) + " scalar twin" +
                      (twins == 1 ? "" : "s") + " for unaligned buffers");
    if (fallbacks)
      extra.push_back(std::to_string(fallbacks) + " fallback kernel" +
                      (fallbacks == 1 ? "" : "s") +
                      " for calls cuBLASLt declines");
    if (!extra.empty())
      os << " (besides: " << llvm::join(extra, ", ") << ")";
    os << ", " << f.intermediateBuffers << " intermediate buffer"
       << (f.intermediateBuffers == 1 ? "" : "s") << " of "
       << orUnknown(f.intermediateBytes) << " bytes\n";
    std::optional<int64_t> totalFlops = 0, totalBytes = 0;
    os << llvm::format("  %3s  %-16s %14s %14s %14s %9s", "#", "op", "FLOPs",
                       "bytes read", "bytes written", "FLOP/B");
    if (report.resourceUsage)
      os << llvm::format(" %5s %7s %6s", "regs", "smem", "stack");
    os << "  statements\n";
    for (size_t i = 0; i < f.kernels.size(); ++i) {
      const KernelInfo &k = f.kernels[i];
      std::string intensity = "?";
      if (k.flops && k.bytesRead && k.bytesWritten) {
        int64_t bytes = *k.bytesRead + *k.bytesWritten;
        intensity =
            bytes ? llvm::formatv("{0:F2}", double(*k.flops) / bytes).str()
                  : "-";
      }
      os << llvm::format("  %3zu  %-16s %14s %14s %14s %9s", i, k.op.c_str(),
                         orUnknown(k.flops).c_str(),
                         orUnknown(k.bytesRead).c_str(),
                         orUnknown(k.bytesWritten).c_str(), intensity.c_str());
      if (report.resourceUsage) {
        auto u = [](std::optional<unsigned> v) {
          return v ? std::to_string(*v) : std::string("?");
        };
        os << llvm::format(" %5s %7s %6s", u(k.registers).c_str(),
                           u(k.sharedBytes).c_str(), u(k.localBytes).c_str());
      }
      os << "  " << llvm::join(statementsOf(f, k), ", ");
      if (!k.name.empty())
        os << "  " << k.name;
      if (k.alternativeOf) {
        // Runs instead of its vector kernel: not in the totals.
        os << "  (scalar twin of #" << *k.alternativeOf << ")\n";
        continue;
      }
      // A fallback's figures stand for its library call's work.
      os << (k.libraryFallback ? "  (fallback of a cuBLASLt call)\n" : "\n");
      auto add = [](std::optional<int64_t> &sum, std::optional<int64_t> v) {
        sum = (sum && v) ? std::optional<int64_t>(*sum + *v) : std::nullopt;
      };
      add(totalFlops, k.flops);
      add(totalBytes, k.bytesRead);
      add(totalBytes, k.bytesWritten);
    }
    os << "  total: " << orUnknown(totalFlops) << " FLOPs, "
       << orUnknown(totalBytes) << " bytes moved\n";
  }
  double total = 0;
  os << "stage times (wall clock, ms)\n";
  for (const auto &[stage, ms] : stageTimes) {
    os << llvm::format("  %-16s %9.2f\n", stage.c_str(), ms);
    total += ms;
  }
  os << llvm::format("  %-16s %9.2f\n", "total", total);
  return text;
}

std::string
formatStatsJson(const KernelReport &report, llvm::StringRef input,
                const std::vector<std::pair<std::string, double>> &stageTimes,
                const ShapeBindings &shapes) {
  Json doc;
  doc["schema_version"] = 1;
  doc["input"] = input.str();
  doc["target"] = report.target;
  Json bound = Json::object();
  for (const auto &[name, size] : shapes)
    bound[name] = size;
  doc["shapes"] = bound;
  doc["resource_usage"] = report.resourceUsage;
  Json functions = Json::array();
  for (const FunctionKernels &f : report.functions) {
    Json fn;
    fn["name"] = f.name;
    fn["kernel_count"] = launchedKernels(f);
    fn["scalar_twin_count"] = llvm::count_if(
        f.kernels, [](const KernelInfo &k) { return k.alternativeOf; });
    fn["library_call_count"] = f.libraryCalls;
    fn["intermediate_buffers"] = f.intermediateBuffers;
    fn["intermediate_bytes"] = orNull(f.intermediateBytes);
    Json kernels = Json::array();
    for (size_t i = 0; i < f.kernels.size(); ++i) {
      const KernelInfo &k = f.kernels[i];
      Json kernel;
      kernel["index"] = i;
      kernel["name"] = k.name.empty() ? Json(nullptr) : Json(k.name);
      kernel["op"] = k.op;
      kernel["scalar_twin_of"] =
          k.alternativeOf ? Json(*k.alternativeOf) : Json(nullptr);
      kernel["library_fallback"] = k.libraryFallback;
      Json statements = Json::array();
      for (const SourcePoint &point : k.sources) {
        auto it = f.statements.find(point);
        if (it == f.statements.end())
          continue;
        Json s;
        s["line"] = point.first;
        s["column"] = point.second;
        s["op"] = it->second.op;
        s["results"] = it->second.results;
        statements.push_back(std::move(s));
      }
      kernel["statements"] = std::move(statements);
      kernel["loops"] = k.loops;
      kernel["iterations"] = orNull(k.iterations);
      kernel["flops_per_iteration"] = k.flopsPerPoint;
      kernel["flops"] = orNull(k.flops);
      kernel["bytes_read"] = orNull(k.bytesRead);
      kernel["bytes_written"] = orNull(k.bytesWritten);
      auto u = [](std::optional<unsigned> v) {
        return v ? Json(*v) : Json(nullptr);
      };
      kernel["registers"] = u(k.registers);
      kernel["shared_bytes"] = u(k.sharedBytes);
      kernel["stack_bytes"] = u(k.localBytes);
      kernels.push_back(std::move(kernel));
    }
    fn["kernels"] = std::move(kernels);
    functions.push_back(std::move(fn));
  }
  doc["functions"] = std::move(functions);
  Json stages = Json::array();
  for (const auto &[stage, ms] : stageTimes)
    stages.push_back(Json{{"stage", stage}, {"ms", ms}});
  doc["stage_times"] = std::move(stages);
  return doc.dump(2) + "\n";
}

} // namespace driver
} // namespace kina
