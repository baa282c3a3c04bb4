//===- Diagnostics.cpp - Text, JSON and verified diagnostics of kinac -----===//
//
// Implements Diagnostics.h. Three handlers sit on an MLIRContext's
// diagnostic engine for one compilation: the text one is MLIR's
// SourceMgrDiagnosticHandler (source line and caret) behind an error limit;
// the JSON one writes one JSON object per diagnostic (fields in a fixed
// order), notes nested; the verifying one records every diagnostic (notes as
// separate entries) and, when the compilation ends, matches them one to one
// against the `expected-<severity>@<line>:<col> {{message}}` annotations of
// the source, printing each unexpected diagnostic and each unmet expectation
// as a located error.
//
//===----------------------------------------------------------------------===//
#include "kina/Diagnostics.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Regex.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

using namespace llvm;

namespace kina {

namespace {

DiagnosticFormat currentFormat = DiagnosticFormat::Text;

const char *severityName(mlir::DiagnosticSeverity s) {
  switch (s) {
  case mlir::DiagnosticSeverity::Error:
    return "error";
  case mlir::DiagnosticSeverity::Warning:
    return "warning";
  case mlir::DiagnosticSeverity::Note:
    return "note";
  case mlir::DiagnosticSeverity::Remark:
    return "remark";
  }
  return "error";
}

/// The first file:line:col inside `loc` (a FileLineColLoc itself, or nested
/// in a name, call-site or fused location), if any.
std::optional<mlir::FileLineColLoc> fileLocOf(mlir::Location loc) {
  if (auto flc = mlir::dyn_cast<mlir::FileLineColLoc>(loc))
    return flc;
  if (auto flc = loc->findInstanceOf<mlir::FileLineColLoc>())
    return flc;
  return std::nullopt;
}

/// One JSON diagnostic object (without notes).
nlohmann::ordered_json jsonObject(std::optional<mlir::FileLineColLoc> loc,
                                  const char *severity,
                                  const std::string &message) {
  nlohmann::ordered_json j;
  if (loc) {
    j["file"] = loc->getFilename().str();
    j["line"] = loc->getLine();
    j["col"] = loc->getColumn();
  } else {
    j["file"] = nullptr;
    j["line"] = nullptr;
    j["col"] = nullptr;
  }
  j["severity"] = severity;
  j["message"] = message;
  return j;
}

/// Prints `j` on one line; bytes that are not UTF-8 (a file name can hold
/// any) become U+FFFD instead of throwing.
void printJsonLine(raw_ostream &os, const nlohmann::ordered_json &j) {
  os << j.dump(-1, ' ', /*ensure_ascii=*/false,
               nlohmann::ordered_json::error_handler_t::replace)
     << "\n";
  os.flush();
}

std::string tooManyErrorsMessage() {
  return "too many errors (" + std::to_string(kMaxReportedErrors) +
         "); the remaining ones are not shown";
}

} // namespace

std::optional<DiagnosticFormat> parseDiagnosticFormat(StringRef name) {
  if (name == "text")
    return DiagnosticFormat::Text;
  if (name == "json")
    return DiagnosticFormat::Json;
  return std::nullopt;
}

void setDiagnosticFormat(DiagnosticFormat format) { currentFormat = format; }

DiagnosticFormat getDiagnosticFormat() { return currentFormat; }

void reportDriverError(const Twine &message) {
  if (currentFormat == DiagnosticFormat::Json) {
    nlohmann::ordered_json j = jsonObject(std::nullopt, "error", message.str());
    j["notes"] = nlohmann::ordered_json::array();
    printJsonLine(errs(), j);
    return;
  }
  errs() << "kinac: error: " << message << "\n";
}

void reportInternalErrorText(const std::string &message,
                             const std::vector<std::string> &notes) {
  if (currentFormat == DiagnosticFormat::Json) {
    nlohmann::ordered_json j =
        jsonObject(std::nullopt, "error", "internal error: " + message);
    j["notes"] = nlohmann::ordered_json::array();
    for (const std::string &n : notes) {
      nlohmann::ordered_json note = jsonObject(std::nullopt, "note", n);
      j["notes"].push_back(note);
    }
    printJsonLine(errs(), j);
    return;
  }
  errs() << "kinac: internal error: " << message << "\n";
  for (const std::string &n : notes)
    errs() << "kinac: note: " << n << "\n";
  errs().flush();
}

void reportDriverWarning(const Twine &message) {
  if (currentFormat == DiagnosticFormat::Json) {
    nlohmann::ordered_json j =
        jsonObject(std::nullopt, "warning", message.str());
    j["notes"] = nlohmann::ordered_json::array();
    printJsonLine(errs(), j);
    return;
  }
  errs() << "kinac: warning: " << message << "\n";
}

//===----------------------------------------------------------------------===//
// The three modes
//===----------------------------------------------------------------------===//

class DiagnosticSession::Impl {
public:
  virtual ~Impl() = default;
};

namespace {

/// Counts errors and says when the limit is reached; shared by text and
/// JSON output.
class ErrorLimit {
public:
  /// True when `diag` is to be printed. Past the limit, prints (once) the
  /// too-many-errors line through `announce` and drops the rest.
  template <typename F> bool admit(const mlir::Diagnostic &diag, F announce) {
    if (diag.getSeverity() != mlir::DiagnosticSeverity::Error)
      return errors <= kMaxReportedErrors;
    if (++errors <= kMaxReportedErrors)
      return true;
    if (errors == kMaxReportedErrors + 1)
      announce();
    return false;
  }

private:
  unsigned errors = 0;
};

/// Clang-style text: MLIR's SourceMgr handler, behind the error limit.
class TextSession : public DiagnosticSession::Impl,
                    public mlir::SourceMgrDiagnosticHandler {
public:
  TextSession(SourceMgr &mgr, mlir::MLIRContext &ctx, raw_ostream &os)
      : SourceMgrDiagnosticHandler(mgr, &ctx, os) {
    setHandler([this](mlir::Diagnostic &diag) {
      if (limit.admit(diag, [this] {
            this->os << "kinac: error: " << tooManyErrorsMessage() << "\n";
          }))
        emitDiagnostic(diag);
      return mlir::success();
    });
  }

private:
  ErrorLimit limit;
};

/// One JSON object per diagnostic, notes nested.
class JsonSession : public DiagnosticSession::Impl,
                    public mlir::ScopedDiagnosticHandler {
public:
  JsonSession(mlir::MLIRContext &ctx, raw_ostream &os)
      : ScopedDiagnosticHandler(&ctx), os(os) {
    setHandler([this](mlir::Diagnostic &diag) {
      if (!limit.admit(diag, [this] {
            nlohmann::ordered_json j =
                jsonObject(std::nullopt, "error", tooManyErrorsMessage());
            j["notes"] = nlohmann::ordered_json::array();
            printJsonLine(this->os, j);
          }))
        return mlir::success();
      nlohmann::ordered_json j =
          jsonObject(fileLocOf(diag.getLocation()),
                     severityName(diag.getSeverity()), diag.str());
      nlohmann::ordered_json notes = nlohmann::ordered_json::array();
      for (const mlir::Diagnostic &note : diag.getNotes())
        notes.push_back(jsonObject(fileLocOf(note.getLocation()),
                                   severityName(note.getSeverity()),
                                   note.str()));
      j["notes"] = std::move(notes);
      printJsonLine(this->os, j);
      return mlir::success();
    });
  }

private:
  raw_ostream &os;
  ErrorLimit limit;
};

/// `expected-<severity>[@<line>][:<col>] {{<message>}}` in the source.
struct Expectation {
  std::string severity;
  unsigned line = 0;
  unsigned col = 0; ///< 0: any column.
  std::string message;
  unsigned annotationLine = 0; ///< Where the annotation is written.
  unsigned annotationCol = 0;
  bool matched = false;
};

/// A diagnostic (or an attached note) the compilation emitted.
struct Emitted {
  std::string severity;
  std::optional<mlir::FileLineColLoc> loc;
  std::string message;
};

/// Records diagnostics and checks them against the annotations at the end.
class VerifySession : public DiagnosticSession::Impl,
                      public mlir::ScopedDiagnosticHandler {
public:
  VerifySession(SourceMgr &mgr, mlir::MLIRContext &ctx, raw_ostream &os,
                bool *verified)
      : ScopedDiagnosticHandler(&ctx), mgr(mgr), os(os), verified(verified) {
    parseAnnotations();
    setHandler([this](mlir::Diagnostic &diag) {
      record(diag);
      for (const mlir::Diagnostic &note : diag.getNotes())
        record(note);
      return mlir::success();
    });
  }
  ~VerifySession() override { *verified = check(); }

private:
  void record(const mlir::Diagnostic &diag) {
    emitted.push_back({severityName(diag.getSeverity()),
                       fileLocOf(diag.getLocation()), diag.str()});
  }
  void parseAnnotations();
  bool check();
  /// Prints `message` as an error at line:col of the main file (col 0: the
  /// line's start), with the source line and a caret.
  void reportAt(unsigned line, unsigned col, const Twine &message);

  SourceMgr &mgr;
  raw_ostream &os;
  bool *verified;
  std::vector<Expectation> expectations;
  std::vector<Emitted> emitted;
  std::vector<std::pair<unsigned, std::string>> malformed; // line, text
};

void VerifySession::parseAnnotations() {
  StringRef buffer = mgr.getMemoryBuffer(mgr.getMainFileID())->getBuffer();
  Regex pattern("expected-(error|warning|note|remark)"
                "(@([+-]?[0-9]+|above|below))?(:([0-9]+))?"
                "[ \t]*\\{\\{(.*)\\}\\}");
  SmallVector<StringRef> lines;
  buffer.split(lines, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    unsigned lineNo = static_cast<unsigned>(i + 1);
    StringRef line = lines[i].rtrim("\r");
    size_t at = line.find("expected-");
    if (at == StringRef::npos)
      continue;
    StringRef rest = line.substr(at);
    if (!rest.starts_with("expected-error") &&
        !rest.starts_with("expected-warning") &&
        !rest.starts_with("expected-note") &&
        !rest.starts_with("expected-remark"))
      continue;
    SmallVector<StringRef> m;
    if (!pattern.match(rest, &m) || m[0].data() != rest.data()) {
      malformed.push_back({lineNo, rest.str()});
      continue;
    }
    Expectation e;
    e.severity = m[1].str();
    e.annotationLine = lineNo;
    e.annotationCol = static_cast<unsigned>(at + 1);
    e.line = lineNo;
    StringRef spec = m[3];
    if (spec == "above") {
      e.line = lineNo - 1;
    } else if (spec == "below") {
      e.line = lineNo + 1;
    } else if (!spec.empty()) {
      int64_t n = 0;
      bool relative = spec[0] == '+' || spec[0] == '-';
      if (spec.drop_front(relative && spec[0] == '+' ? 1 : 0)
              .getAsInteger(10, n) ||
          (relative ? int64_t(lineNo) + n : n) < 1) {
        malformed.push_back({lineNo, rest.str()});
        continue;
      }
      e.line = static_cast<unsigned>(relative ? int64_t(lineNo) + n : n);
    }
    if (!m[5].empty() && m[5].getAsInteger(10, e.col)) {
      malformed.push_back({lineNo, rest.str()});
      continue;
    }
    e.message = m[6].str();
    expectations.push_back(std::move(e));
  }
}

void VerifySession::reportAt(unsigned line, unsigned col, const Twine &msg) {
  SMLoc loc =
      mgr.FindLocForLineAndColumn(mgr.getMainFileID(), line, col ? col : 1);
  mgr.PrintMessage(os, loc, SourceMgr::DK_Error, msg);
}

bool VerifySession::check() {
  bool ok = malformed.empty();
  for (const auto &[line, text] : malformed)
    reportAt(line, 0,
             "malformed diagnostic annotation '" + text +
                 "' (expected 'expected-error@+1:8 {{message}}')");
  StringRef mainFile =
      mgr.getMemoryBuffer(mgr.getMainFileID())->getBufferIdentifier();
  for (const Emitted &d : emitted) {
    Expectation *hit = nullptr;
    if (d.loc && d.loc->getFilename() == mainFile)
      for (Expectation &e : expectations)
        if (!e.matched && e.severity == d.severity &&
            e.line == d.loc->getLine() &&
            (e.col == 0 || e.col == d.loc->getColumn()) &&
            e.message == d.message) {
          hit = &e;
          break;
        }
    if (hit) {
      hit->matched = true;
      continue;
    }
    ok = false;
    std::string text = "unexpected " + d.severity + ": " + d.message;
    if (d.loc && d.loc->getFilename() == mainFile)
      reportAt(d.loc->getLine(), d.loc->getColumn(), text);
    else if (d.loc)
      reportDriverError(d.loc->getFilename().str() + ":" +
                        std::to_string(d.loc->getLine()) + ":" +
                        std::to_string(d.loc->getColumn()) + ": " + text);
    else
      reportDriverError(text + " (with no source location)");
  }
  for (const Expectation &e : expectations) {
    if (e.matched)
      continue;
    ok = false;
    std::string where = std::to_string(e.line) +
                        (e.col ? ":" + std::to_string(e.col) : std::string());
    reportAt(e.annotationLine, e.annotationCol,
             "expected " + e.severity + " at " + where +
                 " was not produced: " + e.message);
  }
  return ok;
}

} // namespace

DiagnosticSession::DiagnosticSession(SourceMgr &sourceMgr,
                                     mlir::MLIRContext &ctx,
                                     DiagnosticFormat format, raw_ostream &os) {
  if (format == DiagnosticFormat::Json)
    impl = std::make_unique<JsonSession>(ctx, os);
  else
    impl = std::make_unique<TextSession>(sourceMgr, ctx, os);
}

DiagnosticSession::DiagnosticSession(SourceMgr &sourceMgr,
                                     mlir::MLIRContext &ctx, raw_ostream &os,
                                     bool *verified)
    : impl(std::make_unique<VerifySession>(sourceMgr, ctx, os, verified)) {}

DiagnosticSession::~DiagnosticSession() = default;

} // namespace kina
