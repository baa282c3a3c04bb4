//===- TunePlan.cpp - kina-run --gpu-info and --tune-plan -----------------===//
//
// Implements TunePlan.h. The plan (written by kinac --autotune-plan,
// src/driver/Autotune.cpp) is
//
//   {"format": "kinac-tuning-plan", "version": 1, "module": ...,
//    "target": "cuda", "gpu_arch": "sm_90", "warmup": 2, "repeat": 9,
//    "max_seconds": 2, "ops": [{"key", "space", "space_version",
//    "function", "shapes", "dtype", "bindings": {"N": 1024}}, ...],
//    "candidates": [{"op": 0, "schedule": {...}, "library": "c000.so",
//    "default": true}, ...]}
//
// and the results this writes beside it are
//
//   {"format": "kinac-tuning-results", "version": 1, "plan": <the plan>,
//    "gpu": {"device": 0, "name": "NVIDIA H200", "arch": "sm_90"},
//    "measurements": [{"candidate": 0, "median_s": 1.2e-5,
//                      "min_s": ..., "runs": 9} | {"candidate": 1,
//                      "error": "..."} | {"candidate": 2,
//                      "skipped": "budget"}, ...]}
//
// (measurements in the order they ran: every default first). The plan's
// optional "budget_s" bounds the measuring as kina-run --budget does.
//
// Each candidate runs in a child kina-run (posix_spawn of `self`), as
// kinac's CPU search runs its candidates.
//
//===----------------------------------------------------------------------===//
#include "TunePlan.h"

#include <nlohmann/json.hpp>

#include <dlfcn.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

extern char **environ;

namespace kina {
namespace run {

namespace {

using Json = nlohmann::ordered_json;

void error(const std::string &message) {
  std::cerr << "kina-run: error: " << message << "\n";
}

/// Runs `argv` (argv[0] the program path) with stdout captured into `out`
/// (stderr passes through); returns the exit status, or -1 when it could
/// not start, 128 + signal when a signal ended it.
int runChild(const std::vector<std::string> &argv, std::string &out) {
  int fds[2];
  if (pipe(fds) != 0)
    return -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_addclose(&actions, fds[1]);
  std::vector<char *> args;
  for (const std::string &a : argv)
    args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(),
                       environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return -1;
  }
  char buffer[4096];
  ssize_t n;
  while ((n = read(fds[0], buffer, sizeof buffer)) > 0)
    out.append(buffer, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  if (waitpid(pid, &status, 0) < 0)
    return -1;
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

/// The plan's field `name` of `j`, or throws std::runtime_error naming it.
const Json &field(const Json &j, const char *name, const std::string &at) {
  auto it = j.find(name);
  if (it == j.end())
    throw std::runtime_error(at + ": no field '" + name + "'");
  return *it;
}

} // namespace

bool queryGpu(GpuInfo &info, std::string &why) {
  void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!cuda) {
    why = "the CUDA driver (libcuda.so.1) does not load";
    return false;
  }
  using Init = int (*)(unsigned);
  using Count = int (*)(int *);
  using Get = int (*)(int *, int);
  using Name = int (*)(char *, int, int);
  using Attribute = int (*)(int *, int, int);
  auto init = reinterpret_cast<Init>(dlsym(cuda, "cuInit"));
  auto count = reinterpret_cast<Count>(dlsym(cuda, "cuDeviceGetCount"));
  auto get = reinterpret_cast<Get>(dlsym(cuda, "cuDeviceGet"));
  auto name = reinterpret_cast<Name>(dlsym(cuda, "cuDeviceGetName"));
  auto attribute =
      reinterpret_cast<Attribute>(dlsym(cuda, "cuDeviceGetAttribute"));
  if (!init || !count || !get || !name || !attribute) {
    why = "libcuda.so.1 lacks the device query functions";
    return false;
  }
  int devices = 0;
  if (init(0) != 0 || count(&devices) != 0 || devices == 0) {
    why = "the CUDA driver reports no device";
    return false;
  }
  const char *env = std::getenv("KINA_DEVICE");
  info.ordinal = env ? std::atoi(env) : 0;
  int device = 0;
  if (info.ordinal < 0 || info.ordinal >= devices ||
      get(&device, info.ordinal) != 0) {
    why = "no CUDA device " + std::to_string(info.ordinal) + " (of " +
          std::to_string(devices) + ")";
    return false;
  }
  char text[256] = {0};
  int major = 0, minor = 0;
  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR / _MINOR.
  if (name(text, sizeof text - 1, device) != 0 ||
      attribute(&major, 75, device) != 0 ||
      attribute(&minor, 76, device) != 0) {
    why = "the CUDA driver does not describe device " +
          std::to_string(info.ordinal);
    return false;
  }
  info.name = text;
  info.arch = "sm_" + std::to_string(major) + std::to_string(minor);
  return true;
}

int printGpuInfo() {
  GpuInfo info;
  std::string why;
  if (!queryGpu(info, why)) {
    error("no CUDA GPU: " + why);
    return 1;
  }
  Json j = {{"device", info.ordinal}, {"name", info.name}, {"arch", info.arch}};
  std::cout << j.dump() << "\n";
  return 0;
}

int runTunePlan(const std::string &planPath, const std::string &self,
                double budgetSeconds) {
  std::ifstream in(planPath);
  if (!in) {
    error("cannot read the tuning plan '" + planPath + "'");
    return 1;
  }
  std::stringstream text;
  text << in.rdbuf();
  Json plan;
  struct Candidate {
    std::string library, function, shape;
    size_t op = 0;
    bool isDefault = false;
  };
  std::vector<Candidate> candidates;
  int warmup = 2, repeat = 9;
  double maxSeconds = 2;
  try {
    plan = Json::parse(text.str());
    if (!plan.is_object() || plan.value("format", "") != "kinac-tuning-plan")
      throw std::runtime_error("not a kinac tuning plan (no \"format\": "
                               "\"kinac-tuning-plan\")");
    if (plan.value("version", 0) != 1)
      throw std::runtime_error("plan version " +
                               field(plan, "version", "plan").dump() +
                               ", this kina-run reads version 1");
    warmup = plan.value("warmup", warmup);
    repeat = plan.value("repeat", repeat);
    maxSeconds = plan.value("max_seconds", maxSeconds);
    if (budgetSeconds <= 0 && plan.contains("budget_s")) {
      if (!plan["budget_s"].is_number() || plan["budget_s"].get<double>() < 0)
        throw std::runtime_error("budget_s: not a non-negative number");
      budgetSeconds = plan["budget_s"].get<double>();
      // 0 in the plan: kinac's budget was spent building; the defaults
      // are still measured.
      if (budgetSeconds == 0)
        budgetSeconds = 1e-9;
    }
    const Json &ops = field(plan, "ops", "plan");
    const Json &list = field(plan, "candidates", "plan");
    std::string dir = planPath.substr(0, planPath.find_last_of('/') + 1);
    for (size_t i = 0; i < list.size(); ++i) {
      std::string at = "candidates[" + std::to_string(i) + "]";
      const Json &c = list[i];
      size_t op = field(c, "op", at).get<size_t>();
      if (op >= ops.size())
        throw std::runtime_error(at + ".op: no op " + std::to_string(op));
      Candidate cand;
      cand.op = op;
      cand.isDefault = c.value("default", false);
      cand.library = dir + field(c, "library", at).get<std::string>();
      cand.function =
          field(ops[op], "function", "ops[" + std::to_string(op) + "]")
              .get<std::string>();
      // A named copy: items() of the temporary value() returns would
      // dangle.
      Json bindings = ops[op].value("bindings", Json::object());
      for (const auto &b : bindings.items())
        cand.shape += (cand.shape.empty() ? "" : ",") + b.key() + "=" +
                      std::to_string(b.value().get<int64_t>());
      candidates.push_back(cand);
    }
  } catch (const std::exception &e) {
    error(planPath + ": malformed tuning plan: " + e.what());
    return 1;
  }
  GpuInfo gpu;
  std::string why;
  if (!queryGpu(gpu, why)) {
    error("--tune-plan needs a CUDA GPU: " + why);
    return 1;
  }
  Json measurements = Json::array();
  std::string dir = planPath.substr(0, planPath.find_last_of('/') + 1);
  std::string path = dir + "results.json";
  // The results so far, written after every candidate (a temporary file
  // renamed over results.json), so a run cut short keeps what it measured.
  auto save = [&]() {
    Json results = Json::object();
    results["format"] = "kinac-tuning-results";
    results["version"] = 1;
    results["plan"] = plan;
    results["gpu"] = {
        {"device", gpu.ordinal}, {"name", gpu.name}, {"arch", gpu.arch}};
    results["measurements"] = measurements;
    std::string temp = path + ".tmp" + std::to_string(getpid());
    {
      std::ofstream outFile(temp);
      outFile << results.dump(2) << "\n";
      if (!outFile) {
        std::remove(temp.c_str());
        error("cannot write '" + temp + "'");
        return false;
      }
    }
    if (std::rename(temp.c_str(), path.c_str()) != 0) {
      std::remove(temp.c_str());
      error("cannot write '" + path + "'");
      return false;
    }
    return true;
  };
  // The defaults first (every op keeps a baseline whatever the budget),
  // then the others in the plan's order while the budget lasts.
  std::vector<size_t> order;
  for (size_t i = 0; i < candidates.size(); ++i)
    if (candidates[i].isDefault)
      order.push_back(i);
  for (size_t i = 0; i < candidates.size(); ++i)
    if (!candidates[i].isDefault)
      order.push_back(i);
  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
        .count();
  };
  std::vector<double> best(candidates.size(), 0); // per op
  size_t skipped = 0, done = 0;
  for (size_t i : order) {
    const Candidate &c = candidates[i];
    if (!c.isDefault && budgetSeconds > 0 && elapsed() >= budgetSeconds) {
      measurements.push_back({{"candidate", i}, {"skipped", "budget"}});
      ++skipped;
      continue;
    }
    ++done;
    std::vector<std::string> argv = {self,
                                     c.library,
                                     c.function,
                                     "--bench",
                                     "--warmup",
                                     std::to_string(warmup),
                                     "--repeat",
                                     std::to_string(repeat),
                                     "--max-seconds",
                                     std::to_string(maxSeconds)};
    if (!c.shape.empty()) {
      argv.push_back("--shape");
      argv.push_back(c.shape);
    }
    std::string out;
    int status = runChild(argv, out);
    Json m = {{"candidate", i}};
    // The last line of a --bench run is its JSON.
    std::string last = out;
    while (!last.empty() && last.back() == '\n')
      last.pop_back();
    last = last.substr(last.find_last_of('\n') + 1);
    Json timing = Json::parse(last, nullptr, false);
    if (status == 0 && timing.is_object() && timing.contains("median_s")) {
      m["median_s"] = timing["median_s"];
      m["min_s"] = timing["min_s"];
      m["runs"] = timing["runs"];
      double median = timing["median_s"].get<double>();
      if (best[c.op] == 0 || median < best[c.op])
        best[c.op] = median;
      std::cerr << "kina-run: tune-plan: " << done << "/" << candidates.size()
                << " candidate " << i << " (op " << c.op << ", @" << c.function
                << (c.isDefault ? ", default" : "") << "): " << median
                << " s, best " << best[c.op] << " s\n";
    } else {
      m["error"] =
          status < 0 ? "kina-run could not start"
                     : "kina-run exited with status " + std::to_string(status);
      std::cerr << "kina-run: tune-plan: " << done << "/" << candidates.size()
                << " candidate " << i << " (op " << c.op << ", @" << c.function
                << ") failed (status " << status << ")\n";
    }
    measurements.push_back(std::move(m));
    if (!save())
      return 1;
  }
  // The skipped candidates (and an empty plan's results) go in too.
  if ((skipped || candidates.empty()) && !save())
    return 1;
  if (skipped)
    std::cerr << "kina-run: tune-plan: the budget of " << budgetSeconds
              << " s ended after " << done << " candidates; " << skipped
              << " not measured\n";
  std::cerr << "kina-run: tune-plan: wrote " << path << "\n";
  return 0;
}

} // namespace run
} // namespace kina
