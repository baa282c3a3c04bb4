//===- Multiversion.cpp - One object for every x86-64 level ---------------===//
//
// Without --mcpu, the cpu target's object carries every function compiled
// for several x86-64 micro-architecture levels (the psABI's x86-64,
// x86-64-v3, x86-64-v4) and each exported symbol dispatches on its first
// call to the best version the host can run, as ISPC's multi-target output
// and GCC's target_clones do (docs/integration.md, "Processor levels").
//
// The rewrite works on the LLVM IR mlir-translate wrote, in kinac's process
// (LLVM's C++ API), before `opt` and one `llc` run:
//  - every function definition F is cloned once per level into the same
//    module as the internal function `F.<level>` (`kina_f.x86_64_v3`), with
//    the attribute "target-cpu"=<level>: opt's cost models and llc read the
//    processor from it, function by function. Calls between the module's
//    functions are redirected to the callee's clone of the same level, so a
//    version never leaves its level (and the inliner, which refuses callees
//    of another processor, still inlines). Globals (the manifest, the
//    version-check flags, constants) stay shared by all versions;
//  - every exported definition (non-local linkage: `kina_<fn>`,
//    `kinatd_<fn>`, `kina_module_manifest` ...) keeps its name, linkage and
//    signature and becomes a dispatcher: it loads an internal pointer slot
//    (acquire); when null it asks the runtime for the host's level
//    (`kina_rt_cpu_level`, libkina_runtime.a, runtime/CpuLevel.cpp), picks
//    the highest version at or below it, stores it (release; racing first
//    calls store the same pointer) and then tail-calls (musttail) the
//    version with its own arguments;
//  - the original internal definitions, unused once the exported ones are
//    dispatchers, are removed (if a global refers to one, they all stay,
//    compiled for the generic processor).
//
//===----------------------------------------------------------------------===//
#include "DriverImpl.h"
#include "kina/Target.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/IRReader/IRReader.h"
#include "llvm/Linker/Linker.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/ValueMapper.h"

namespace kina {
namespace driver {

// LLVM IR's, not the Kina AST's (kina::Function, kina::Module).
using llvm::Argument;
using llvm::Attribute;
using llvm::Function;
using llvm::Module;
using llvm::Type;
using llvm::Value;

const std::vector<CpuLevel> &multiversionLevels() {
  static const std::vector<CpuLevel> levels = {
      {"x86-64", 1}, {"x86-64-v3", 3}, {"x86-64-v4", 4}};
  return levels;
}

bool wantsMultiversioning(const DriverOptions &opts) {
  return opts.target == "cpu" && cpuMultiversioned(opts.optLevel, opts.mcpu);
}

namespace {

/// `name.x86_64_v3`: the clone's name (dashes of the level spelled as
/// underscores, so the name needs no quoting in assembly or debuggers).
std::string versionName(StringRef name, StringRef level) {
  std::string suffix = level.str();
  for (char &c : suffix)
    if (c == '-')
      c = '_';
  return (name + "." + suffix).str();
}

/// Replaces the body of the exported `f` with the dispatcher over
/// `versions` (one per level of `levels`, same order).
void buildDispatcher(Function &f, ArrayRef<CpuLevel> levels,
                     ArrayRef<Function *> versions, FunctionCallee cpuLevel) {
  Module &m = *f.getParent();
  LLVMContext &ctx = m.getContext();
  GlobalValue::LinkageTypes linkage = f.getLinkage();
  f.deleteBody();
  f.setLinkage(linkage);
  // The dispatcher reads and writes its slot: drop what the original body
  // promised about memory; it keeps its parameters' attributes (musttail
  // forwards them).
  f.removeFnAttr(Attribute::Memory);
  f.removeFnAttr("target-cpu");
  f.removeFnAttr("target-features");

  PointerType *ptr = PointerType::getUnqual(ctx);
  auto *slot = new GlobalVariable(
      m, ptr, /*isConstant=*/false, GlobalValue::InternalLinkage,
      ConstantPointerNull::get(ptr), f.getName() + ".kina.version");
  slot->setAlignment(Align(8));

  BasicBlock *entry = BasicBlock::Create(ctx, "entry", &f);
  BasicBlock *resolve = BasicBlock::Create(ctx, "resolve", &f);
  BasicBlock *call = BasicBlock::Create(ctx, "call", &f);
  IRBuilder<> b(entry);
  LoadInst *cached = b.CreateAlignedLoad(ptr, slot, Align(8), "cached");
  cached->setAtomic(AtomicOrdering::Acquire);
  Value *unresolved = b.CreateICmpEQ(cached, ConstantPointerNull::get(ptr));
  b.CreateCondBr(unresolved, resolve, call,
                 MDBuilder(ctx).createUnlikelyBranchWeights());

  b.SetInsertPoint(resolve);
  Value *host = b.CreateCall(cpuLevel, {}, "host.level");
  // Levels ascend: the last one at or below the host's wins; the first
  // (x86-64, level 1) runs anywhere.
  Value *chosen = versions.front();
  for (size_t i = 1; i < levels.size(); ++i) {
    Value *fits = b.CreateICmpSGE(host, b.getInt32(levels[i].level));
    chosen = b.CreateSelect(fits, versions[i], chosen);
  }
  StoreInst *store = b.CreateAlignedStore(chosen, slot, Align(8));
  store->setAtomic(AtomicOrdering::Release);
  b.CreateBr(call);

  b.SetInsertPoint(call);
  PHINode *target = b.CreatePHI(ptr, 2, "version");
  target->addIncoming(cached, entry);
  target->addIncoming(chosen, resolve);
  SmallVector<Value *> args;
  for (Argument &arg : f.args())
    args.push_back(&arg);
  CallInst *forward = b.CreateCall(f.getFunctionType(), target, args);
  forward->setTailCallKind(CallInst::TCK_MustTail);
  forward->setCallingConv(f.getCallingConv());
  forward->setAttributes(f.getAttributes());
  if (f.getReturnType()->isVoidTy())
    b.CreateRetVoid();
  else
    b.CreateRet(forward);
}

} // namespace

/// Links `own`, the module of `level`'s version built by a pipeline of its
/// own, into `m`: its definitions renamed as that level's versions
/// (versionName, internal, "target-cpu" the level), its definitions of
/// exported globals (the manifest, ...) made declarations of `m`'s.
/// Returns, for each of `definitions`, that level's version (null for an
/// internal one, which needs none: own's functions call own's). Fails when
/// an exported definition has no version of the same type in `own`.
Expected<SmallVector<Function *>>
linkOwnVersion(Module &m, std::unique_ptr<Module> own, const CpuLevel &level,
               ArrayRef<Function *> definitions) {
  auto fail = [&](const Twine &why) {
    return createStringError(inconvertibleErrorCode(),
                             "internal error: the " + level.name +
                                 " version's module: " + why);
  };
  if (!own->alias_empty() || !own->ifunc_empty())
    return fail("it has aliases or ifuncs");
  // Linked as external definitions (the linker brings in a source's
  // internal ones only where something refers to them), internal after.
  std::vector<std::string> renamed;
  for (Function &f : *own) {
    if (f.isDeclaration())
      continue;
    f.setName(versionName(f.getName(), level.name));
    renamed.push_back(f.getName().str());
    f.setLinkage(GlobalValue::ExternalLinkage);
    f.setVisibility(GlobalValue::DefaultVisibility);
    f.setDLLStorageClass(GlobalValue::DefaultStorageClass);
    f.setComdat(nullptr);
    f.setDSOLocal(true);
    f.addFnAttr("target-cpu", level.name);
    f.removeFnAttr("target-features");
    f.removeFnAttr("tune-cpu");
  }
  for (llvm::GlobalVariable &g : own->globals()) {
    if (g.isDeclaration() || g.hasLocalLinkage())
      continue; // internal ones the linker renames where `m` has the name
    if (g.hasAppendingLinkage())
      return fail("it defines the appending global '" + g.getName() + "'");
    g.setInitializer(nullptr);
    g.setLinkage(GlobalValue::ExternalLinkage);
    g.setComdat(nullptr);
  }
  if (Linker::linkModules(m, std::move(own)))
    return fail("it does not link with the baseline module");
  for (const std::string &name : renamed)
    if (Function *f = m.getFunction(name)) {
      f->setLinkage(GlobalValue::InternalLinkage);
      f->setDSOLocal(true);
    }
  SmallVector<Function *> versions;
  for (Function *f : definitions) {
    if (f->hasLocalLinkage()) {
      versions.push_back(nullptr);
      continue;
    }
    Function *v = m.getFunction(versionName(f->getName(), level.name));
    if (!v || v->isDeclaration())
      return fail("no definition of '" + f->getName() + "'");
    if (v->getFunctionType() != f->getFunctionType())
      return fail("'" + f->getName() + "' has another type");
    versions.push_back(v);
  }
  return versions;
}

Error multiversionModule(Module &m, ArrayRef<CpuLevel> levels,
                         MutableArrayRef<std::unique_ptr<Module>> own) {
  SmallVector<Function *> definitions;
  for (Function &f : m)
    if (!f.isDeclaration())
      definitions.push_back(&f);
  if (definitions.empty() || levels.empty())
    return Error::success();

  // One version of every definition per level: the level's own module
  // when it has one, else clones; calls between definitions go to the
  // callee's clone of the same level (globals map to themselves).
  std::vector<SmallVector<Function *>> versions(levels.size());
  for (size_t l = 0; l < levels.size(); ++l) {
    if (l < own.size() && own[l]) {
      Expected<SmallVector<Function *>> linked =
          linkOwnVersion(m, std::move(own[l]), levels[l], definitions);
      if (!linked)
        return linked.takeError();
      versions[l] = std::move(*linked);
      continue;
    }
    ValueToValueMapTy map;
    for (Function *f : definitions) {
      Function *clone = Function::Create(
          f->getFunctionType(), GlobalValue::InternalLinkage,
          f->getAddressSpace(), versionName(f->getName(), levels[l].name), &m);
      map[f] = clone;
      versions[l].push_back(clone);
    }
    for (size_t i = 0; i < definitions.size(); ++i) {
      Function *f = definitions[i], *clone = versions[l][i];
      auto arg = clone->arg_begin();
      for (const Argument &a : f->args()) {
        arg->setName(a.getName());
        map[&a] = &*arg++;
      }
      SmallVector<ReturnInst *, 8> returns;
      CloneFunctionInto(clone, f, map,
                        CloneFunctionChangeType::LocalChangesOnly, returns);
      clone->setLinkage(GlobalValue::InternalLinkage);
      clone->setVisibility(GlobalValue::DefaultVisibility);
      clone->setDLLStorageClass(GlobalValue::DefaultStorageClass);
      clone->setComdat(nullptr);
      clone->setDSOLocal(true);
      clone->addFnAttr("target-cpu", levels[l].name);
      clone->removeFnAttr("target-features");
      clone->removeFnAttr("tune-cpu");
    }
  }

  // int32_t kina_rt_cpu_level(void), libkina_runtime.a.
  FunctionCallee cpuLevel = m.getOrInsertFunction(
      "kina_rt_cpu_level", FunctionType::get(Type::getInt32Ty(m.getContext()),
                                             /*isVarArg=*/false));
  SmallVector<Function *> internal;
  for (size_t i = 0; i < definitions.size(); ++i) {
    Function *f = definitions[i];
    if (f->hasLocalLinkage()) {
      internal.push_back(f);
      continue;
    }
    SmallVector<Function *> perLevel;
    for (size_t l = 0; l < levels.size(); ++l)
      perLevel.push_back(versions[l][i]);
    buildDispatcher(*f, levels, perLevel, cpuLevel);
  }
  // The original internal definitions are now used only by each other,
  // unless a global refers to one (llvm.global_ctors, a table): then they
  // all stay, compiled for the generic processor.
  SmallPtrSet<Function *, 16> originals(internal.begin(), internal.end());
  bool referenced = llvm::any_of(internal, [&](Function *f) {
    return llvm::any_of(f->users(), [&](User *user) {
      auto *inst = dyn_cast<Instruction>(user);
      return !inst || !originals.contains(inst->getFunction());
    });
  });
  if (!referenced) {
    for (Function *f : internal)
      f->dropAllReferences();
    for (Function *f : internal)
      f->eraseFromParent();
  }

  std::string broken;
  raw_string_ostream os(broken);
  if (verifyModule(m, &os))
    return createStringError(inconvertibleErrorCode(),
                             "internal error: the multiversioned module does "
                             "not verify: " +
                                 os.str());
  return Error::success();
}

Error multiversionFile(StringRef inPath, StringRef outPath,
                       ArrayRef<CpuLevel> levels,
                       ArrayRef<std::string> ownPaths) {
  LLVMContext ctx;
  auto parse = [&](StringRef path) {
    return readLlvmIrFile(path, ctx, "mlir-translate");
  };
  Expected<std::unique_ptr<Module>> m = parse(inPath);
  if (!m)
    return m.takeError();
  std::vector<std::unique_ptr<Module>> own(levels.size());
  for (size_t l = 0; l < levels.size() && l < ownPaths.size(); ++l) {
    if (ownPaths[l].empty())
      continue;
    Expected<std::unique_ptr<Module>> version = parse(ownPaths[l]);
    if (!version)
      return version.takeError();
    own[l] = std::move(*version);
  }
  if (Error err = multiversionModule(**m, levels, own))
    return err;
  return writeLlvmIrFile(**m, outPath);
}

} // namespace driver
} // namespace kina
