//===- FrontendTestUtil.h - Helpers for the front-end unit tests ----------===//
//
// A GoogleTest fixture owning an MLIRContext whose diagnostics are captured
// as `file:line:col: error: message` strings (notes as `note:`), plus
// shortcuts that parse, analyse and print Kina IR text, and one that reports
// the inferred type of a value in a small function.
//
//===----------------------------------------------------------------------===//
#ifndef KINA_TESTS_UNIT_FRONTENDTESTUTIL_H
#define KINA_TESTS_UNIT_FRONTENDTESTUTIL_H

#include "kina/Frontend.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kina::test {

class FrontendTest : public ::testing::Test {
public:
  FrontendTest();

  /// Parses `src` as file `filename`; std::nullopt on failure.
  std::optional<Module> parse(const std::string &src,
                              const std::string &filename = "t.kir");
  /// Parses and analyses; std::nullopt if either failed.
  std::optional<Module> check(const std::string &src,
                              const std::string &filename = "t.kir");
  /// Canonical text of a module that parses and checks ("" on failure).
  std::string canonical(const std::string &src,
                        const std::string &filename = "t.kir");
  /// Builds `func @f(<params>) -> <type of first param> { <body> return
  /// <first param> }`, analyses it and returns the printed type(s) of the
  /// statement defining `%value`, or "error: <first diagnostic>" on failure.
  std::string typeOf(const std::string &params, const std::string &body,
                     const std::string &value);
  /// The first captured error message (without location), or "".
  std::string firstError() const;
  /// All diagnostics joined by newlines.
  std::string allDiags() const;
  size_t errorCount() const;

  mlir::MLIRContext ctx;
  std::vector<std::string> diags;
  std::vector<std::string> messages; // errors only, without location

private:
  std::unique_ptr<mlir::ScopedDiagnosticHandler> handler;
};

} // namespace kina::test

#endif // KINA_TESTS_UNIT_FRONTENDTESTUTIL_H
