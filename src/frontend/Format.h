//===- Format.h - Spelling numbers and strings as Kina IR text ------------===//
//
// Private to src/frontend: how the canonical printer (Printer.cpp) and the
// diagnostics of Sema spell a float, an integer or a string so that the
// lexer (Lexer.cpp) reads it back to exactly the same value.
//
//===----------------------------------------------------------------------===//
#ifndef KINA_FRONTEND_FORMAT_H
#define KINA_FRONTEND_FORMAT_H

#include <string>

namespace kina {

/// The shortest decimal spelling of `v` that reads back (strtod) to the same
/// double, always recognisable as a float: it holds a '.' or an exponent, or
/// is `inf`, `-inf` or `nan` (`1.0`, `0.1`, `1e-05` -> `1e-5`, `-0.0`).
std::string formatFloat(double v);

/// `s` as a Kina IR string literal: in double quotes, with `\\`, `\"`, `\n`
/// and `\t` escaped.
std::string quoteString(const std::string &s);

} // namespace kina

#endif // KINA_FRONTEND_FORMAT_H
