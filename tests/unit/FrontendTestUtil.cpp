//===- FrontendTestUtil.cpp - Helpers for the front-end unit tests --------===//
//
// Implements FrontendTestUtil.h: the diagnostic capture (through an
// mlir::ScopedDiagnosticHandler) and the parse/check/print shortcuts.
//
//===----------------------------------------------------------------------===//
#include "FrontendTestUtil.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"

namespace kina::test {

namespace {
std::string formatLoc(mlir::Location loc) {
  if (auto f = llvm::dyn_cast<mlir::FileLineColLoc>(loc))
    return f.getFilename().str() + ":" + std::to_string(f.getLine()) + ":" +
           std::to_string(f.getColumn());
  return "<unknown>";
}
} // namespace

FrontendTest::FrontendTest() {
  handler = std::make_unique<mlir::ScopedDiagnosticHandler>(
      &ctx, [this](mlir::Diagnostic &d) {
        const char *sev =
            d.getSeverity() == mlir::DiagnosticSeverity::Error  ? "error"
            : d.getSeverity() == mlir::DiagnosticSeverity::Note ? "note"
                                                                : "other";
        diags.push_back(formatLoc(d.getLocation()) + ": " + sev + ": " +
                        d.str());
        if (d.getSeverity() == mlir::DiagnosticSeverity::Error)
          messages.push_back(d.str());
        for (mlir::Diagnostic &n : d.getNotes())
          diags.push_back(formatLoc(n.getLocation()) + ": note: " + n.str());
        return mlir::success();
      });
}

std::optional<Module> FrontendTest::parse(const std::string &src,
                                          const std::string &filename) {
  mlir::FailureOr<Module> m = parseModule(src, filename, ctx);
  if (mlir::failed(m))
    return std::nullopt;
  return std::move(*m);
}

std::optional<Module> FrontendTest::check(const std::string &src,
                                          const std::string &filename) {
  std::optional<Module> m = parse(src, filename);
  if (!m || mlir::failed(analyzeModule(*m, ctx)))
    return std::nullopt;
  return m;
}

std::string FrontendTest::canonical(const std::string &src,
                                    const std::string &filename) {
  std::optional<Module> m = check(src, filename);
  return m ? printModule(*m) : std::string();
}

std::string FrontendTest::typeOf(const std::string &params,
                                 const std::string &body,
                                 const std::string &value) {
  // The first parameter's name and type: "%x: f32[N, 4], ..." .
  std::string first = params.substr(0, params.find(':'));
  size_t typeStart = params.find(':') + 1;
  int depth = 0;
  size_t typeEnd = typeStart;
  for (; typeEnd < params.size(); ++typeEnd) {
    char c = params[typeEnd];
    if (c == '[')
      ++depth;
    else if (c == ']')
      --depth;
    else if (c == ',' && depth == 0)
      break;
  }
  std::string firstType = params.substr(typeStart, typeEnd - typeStart);
  std::string src = "func @f(" + params + ") -> " + firstType + " {\n" + body +
                    "\n  return " + first + "\n}\n";
  diags.clear();
  messages.clear();
  std::optional<Module> m = check(src);
  if (!m)
    return "error: " + firstError();
  for (const Statement &st : m->functions[0].body)
    for (size_t i = 0; i < st.results.size(); ++i)
      if ("%" + st.results[i] == value) {
        if (st.resultTypes.size() == 1)
          return st.resultTypes[0].str();
        std::string s = "(";
        for (size_t k = 0; k < st.resultTypes.size(); ++k)
          s += (k ? ", " : "") + st.resultTypes[k].str();
        return s + ")";
      }
  return "no such value";
}

std::string FrontendTest::firstError() const {
  return messages.empty() ? std::string() : messages.front();
}

std::string FrontendTest::allDiags() const {
  std::string s;
  for (const std::string &d : diags)
    s += d + "\n";
  return s;
}

size_t FrontendTest::errorCount() const { return messages.size(); }

} // namespace kina::test
