//===- LlvmIrFiles.cpp - The driver's in-process LLVM IR rewrites' files --===//
//
// The driver rewrites LLVM IR in its own process between the LLVM tools
// (Multiversion.cpp after mlir-translate, VectorMath.cpp after opt): each
// reads a tool's textual output into a module and writes the rewritten
// module for the next tool. These are those two steps.
//
//===----------------------------------------------------------------------===//
#include "DriverImpl.h"

#include "llvm/IRReader/IRReader.h"
#include "llvm/Support/SourceMgr.h"

namespace kina {
namespace driver {

Expected<std::unique_ptr<llvm::Module>>
readLlvmIrFile(StringRef path, LLVMContext &ctx, StringRef producer) {
  SMDiagnostic diag;
  std::unique_ptr<llvm::Module> m = parseIRFile(path, diag, ctx);
  if (m)
    return m;
  std::string text;
  raw_string_ostream os(text);
  diag.print("kinac", os);
  return createStringError(inconvertibleErrorCode(),
                           "internal error: cannot read " + producer.str() +
                               "'s LLVM IR: " + os.str());
}

Error writeLlvmIrFile(const llvm::Module &m, StringRef path) {
  std::string text;
  raw_string_ostream os(text);
  m.print(os, nullptr);
  return writeOutput(path, os.str());
}

} // namespace driver
} // namespace kina
