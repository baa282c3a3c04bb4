//===- VectorMath.cpp - Vector math calls into glibc's libmvec
//-------------===//
//
// kina-opt's pipelines vectorise elementwise loops in MLIR
// (kina-tile-and-vectorize), so a `sin`, `cos`, `log`, f64 `pow` (and an
// `exp` or f32 `pow` that kina-math-approximation left alone: f64, or f32 for a
// processor without FMA) reaches LLVM IR as a vector intrinsic, `llvm.sin.v8f32`.
// llc scalarises those into one libm call per lane (`sinf` eight times),
// which kept these functions at libm's scalar speed (docs/tolerances.md).
//
// This rewrite, on the LLVM IR after `opt` and before `llc`, replaces each
// such call by calls of glibc's vector math library, libmvec
// (`_ZGVdN8v_sinf`: the x86-64 vector function ABI's names, ISA letter b =
// SSE, c = AVX, d = AVX2, e = AVX-512, then the lane count), the widest
// variant the calling function's processor runs (its "target-cpu" and
// "target-features" attributes: each version of a multiversioned object
// gets its own; else --mcpu; else the generic x86-64): a vector of another
// length is split into the variant's width, the last piece padded with
// 1.0 lanes. glibc's `libm.so` and `libm.a` are linker scripts that take
// libmvec along (`AS_NEEDED`), so the link line stays `-lm`. Only the
// functions of libmvec's first release (glibc 2.22, 2015) are used: sin,
// cos, exp, log, pow, f32 and f64. glibc documents their accuracy (its
// libm-test-ulps: within 4 ulps); bench/cpu/math_ulp.py measures it with
// kinac's code, docs/tolerances.md has the figures.
//
// Why not llc's own `-vector-library=LIBMVEC` (LLVM's ReplaceWithVeclib):
// seen with LLVM 22, it maps `llvm.sin.v8f32` to the AVX2 variant
// `_ZGVdN8v_sinf` in a function for the generic x86-64 too, whose caller
// then passes the vector in two SSE registers where the callee reads one
// AVX register (wrong results on every processor, SIGILL in the callee on
// one without AVX2), and it knows no AVX-512 variant (a 16-lane call stays
// 16 scalar calls). tests/filecheck/vector_math_llc.ll records that
// behaviour, so a fixed LLVM shows up as a failing check.
//
//===----------------------------------------------------------------------===//
#include "DriverImpl.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Analysis/VectorUtils.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

namespace kina {
namespace driver {

using llvm::Function;
using llvm::Module;
using llvm::Type;
using llvm::Value;

namespace {

/// The libmvec name stem of a vector math intrinsic ("sin"), or empty.
StringRef libmvecStem(Intrinsic::ID id) {
  switch (id) {
  case Intrinsic::sin:
    return "sin";
  case Intrinsic::cos:
    return "cos";
  case Intrinsic::exp:
    return "exp";
  case Intrinsic::log:
    return "log";
  case Intrinsic::pow:
    return "pow";
  default:
    return "";
  }
}

/// The widest libmvec variant a processor runs: its ISA letter and its
/// vector bits.
struct Variant {
  char isa;
  unsigned bits;
};

/// Variants by processor ("target-cpu" + "target-features"), cached.
class Processors {
public:
  Variant of(const Function &f, StringRef defaultCpu) {
    std::string cpu =
        f.getFnAttribute("target-cpu").isValid()
            ? f.getFnAttribute("target-cpu").getValueAsString().str()
            : defaultCpu.str();
    if (cpu.empty())
      cpu = "x86-64";
    std::string features =
        f.getFnAttribute("target-features").isValid()
            ? f.getFnAttribute("target-features").getValueAsString().str()
            : "";
    std::string key = cpu + "|" + features;
    auto it = cache.find(key);
    if (it != cache.end())
      return it->second;
    Variant v = compute(cpu, features);
    cache[key] = v;
    return v;
  }

private:
  static Variant compute(const std::string &cpu, const std::string &features) {
    Variant sse{'b', 128};
    InitializeNativeTarget();
    Triple triple(sys::getDefaultTargetTriple());
    std::string error;
    const Target *target = TargetRegistry::lookupTarget(triple, error);
    if (!target)
      return sse;
    std::unique_ptr<MCSubtargetInfo> info(
        target->createMCSubtargetInfo(triple, cpu, features));
    if (!info)
      return sse;
    if (info->checkFeatures("+avx512f"))
      return {'e', 512};
    if (info->checkFeatures("+avx2"))
      return {'d', 256};
    if (info->checkFeatures("+avx"))
      return {'c', 256};
    return sse;
  }
  llvm::StringMap<Variant> cache;
};

/// Replaces `call` (a vector sin/cos/exp/log/pow of f32 or f64 lanes) by
/// calls of libmvec's `variant`, split and padded to its width.
void replaceCall(IntrinsicInst *call, StringRef stem, Variant variant) {
  auto *type = cast<FixedVectorType>(call->getType());
  Type *element = type->getElementType();
  bool f32 = element->isFloatTy();
  unsigned lanes = type->getNumElements();
  unsigned width = variant.bits / (f32 ? 32 : 64);
  unsigned arity = call->arg_size();
  std::string name = (Twine("_ZGV") + Twine(variant.isa) + "N" + Twine(width) +
                      (arity == 2 ? "vv_" : "v_") + stem + (f32 ? "f" : ""))
                         .str();
  Module &m = *call->getModule();
  auto *pieceType = FixedVectorType::get(element, width);
  SmallVector<Type *, 2> params(arity, pieceType);
  FunctionCallee callee =
      m.getOrInsertFunction(name, FunctionType::get(pieceType, params, false));
  if (auto *fn = dyn_cast<Function>(callee.getCallee())) {
    // What the intrinsic promised: no memory, no unwinding (libmvec's
    // callouts to the scalar functions may set errno, which kinac's code
    // never reads).
    fn->setDoesNotAccessMemory();
    fn->setDoesNotThrow();
    fn->addFnAttr(llvm::Attribute::WillReturn);
  }

  IRBuilder<> b(call);
  unsigned padded = alignTo(lanes, width);
  unsigned pieces = padded / width;
  Value *one = ConstantFP::get(type, 1.0);
  SmallVector<Value *, 2> args;
  for (unsigned a = 0; a < arity; ++a) {
    Value *arg = call->getArgOperand(a);
    if (padded != lanes) {
      // Lanes past the end read the second operand's 1.0.
      SmallVector<int> mask;
      for (unsigned i = 0; i < padded; ++i)
        mask.push_back(i < lanes ? int(i) : int(lanes));
      arg = b.CreateShuffleVector(arg, one, mask);
    }
    args.push_back(arg);
  }
  SmallVector<Value *> results;
  for (unsigned p = 0; p < pieces; ++p) {
    SmallVector<Value *, 2> pieceArgs;
    for (Value *arg : args)
      pieceArgs.push_back(
          pieces == 1 ? arg
                      : b.CreateShuffleVector(
                            arg, createSequentialMask(p * width, width, 0)));
    CallInst *piece = b.CreateCall(callee, pieceArgs);
    piece->setDoesNotAccessMemory();
    piece->setDoesNotThrow();
    results.push_back(piece);
  }
  Value *result =
      pieces == 1 ? results.front() : concatenateVectors(b, results);
  if (padded != lanes)
    result = b.CreateShuffleVector(result, createSequentialMask(0, lanes, 0));
  result->takeName(call);
  call->replaceAllUsesWith(result);
  call->eraseFromParent();
}

} // namespace

unsigned mapVectorMath(llvm::Module &m, StringRef defaultCpu) {
  Processors processors;
  unsigned replaced = 0;
  for (Function &f : m) {
    if (f.isDeclaration())
      continue;
    SmallVector<std::pair<IntrinsicInst *, StringRef>> calls;
    for (Instruction &inst : instructions(f)) {
      auto *call = dyn_cast<IntrinsicInst>(&inst);
      if (!call)
        continue;
      StringRef stem = libmvecStem(call->getIntrinsicID());
      auto *type = dyn_cast<FixedVectorType>(call->getType());
      if (stem.empty() || !type || type->getNumElements() < 2 ||
          !(type->getElementType()->isFloatTy() ||
            type->getElementType()->isDoubleTy()))
        continue;
      calls.push_back({call, stem});
    }
    if (calls.empty())
      continue;
    Variant variant = processors.of(f, defaultCpu);
    for (auto &[call, stem] : calls)
      replaceCall(call, stem, variant);
    replaced += calls.size();
  }
  // The intrinsics' declarations no call uses any more.
  for (Function &f : llvm::make_early_inc_range(m))
    if (f.isDeclaration() && f.use_empty() &&
        !libmvecStem(f.getIntrinsicID()).empty())
      f.eraseFromParent();
  return replaced;
}

bool mayNeedVectorMath(StringRef llvmIr) {
  for (StringRef stem : {"sin", "cos", "exp", "log", "pow"})
    if (llvmIr.contains(("@llvm." + stem + ".v").str()))
      return true;
  return false;
}

Error mapVectorMathFile(StringRef inPath, StringRef outPath,
                        StringRef defaultCpu) {
  LLVMContext ctx;
  Expected<std::unique_ptr<Module>> m = readLlvmIrFile(inPath, ctx, "opt");
  if (!m)
    return m.takeError();
  mapVectorMath(**m, defaultCpu);
  std::string problems;
  raw_string_ostream os(problems);
  if (verifyModule(**m, &os))
    return createStringError(inconvertibleErrorCode(),
                             "internal error: the libmvec rewrite left "
                             "invalid LLVM IR: " +
                                 os.str());
  return writeLlvmIrFile(**m, outPath);
}

} // namespace driver
} // namespace kina
