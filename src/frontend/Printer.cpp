//===- Printer.cpp - Canonical Kina IR text -------------------------------===//
//
// The canonical text of a module (`kinac --emit=kir`, spec "Module and
// functions"): the module line, a blank line between functions, two-space
// indentation, one statement per line with every result annotated with its
// inferred type (a parenthesised list for several results), attributes in
// alphabetical order (defaults that Sema added are not printed), single
// spaces between tokens, and numbers spelled so that they read back to the
// same value. The output parses and analyses to the same module, so printing
// it again gives the same bytes.
//
//===----------------------------------------------------------------------===//
#include "Format.h"

#include "kina/Frontend.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace kina {

std::string formatFloat(double v) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v > 0 ? "inf" : "-inf";
  char buf[64];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof(buf), "%.*g", prec, v);
    double back = std::strtod(buf, nullptr);
    if (back == v && std::signbit(back) == std::signbit(v))
      break;
  }
  std::string s = buf;
  size_t e = s.find('e');
  if (e == std::string::npos) {
    if (s.find('.') == std::string::npos)
      s += ".0";
    return s;
  }
  // Exponent without '+' and leading zeros: 1e-05 -> 1e-5, 1e+20 -> 1e20.
  std::string mantissa = s.substr(0, e);
  std::string exponent = s.substr(e + 1);
  std::string sign;
  if (!exponent.empty() && (exponent[0] == '+' || exponent[0] == '-')) {
    if (exponent[0] == '-')
      sign = "-";
    exponent.erase(0, 1);
  }
  size_t nz = exponent.find_first_not_of('0');
  exponent = nz == std::string::npos ? "0" : exponent.substr(nz);
  return mantissa + "e" + sign + exponent;
}

std::string quoteString(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
    case '\\':
      out += "\\\\";
      break;
    case '"':
      out += "\\\"";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      out += c;
    }
  }
  return out + "\"";
}

namespace {

void printDense(std::string &out, const DenseLiteral &d) {
  if (d.isList) {
    out += '[';
    for (size_t i = 0; i < d.elements.size(); ++i) {
      if (i)
        out += ", ";
      printDense(out, d.elements[i]);
    }
    out += ']';
  } else if (d.isBool) {
    out += d.intValue ? "true" : "false";
  } else if (d.isInteger) {
    out += std::to_string(d.intValue);
  } else {
    out += formatFloat(d.floatValue);
  }
}

void printOperand(std::string &out, const Operand &o) {
  switch (o.kind) {
  case Operand::Value:
    out += "%" + o.name;
    break;
  case Operand::IntLiteral:
    out += std::to_string(o.intValue);
    break;
  case Operand::FloatLiteral:
    out += formatFloat(o.floatValue);
    break;
  case Operand::BoolLiteral:
    out += o.intValue ? "true" : "false";
    break;
  case Operand::Dense:
    out += "dense<";
    if (o.dense)
      printDense(out, *o.dense);
    out += ">";
    break;
  }
}

void printAttrValue(std::string &out, const AttrValue &v) {
  switch (v.kind) {
  case AttrValue::Int:
    out += std::to_string(v.intValue);
    break;
  case AttrValue::Float:
    out += formatFloat(v.floatValue);
    break;
  case AttrValue::Bool:
    out += v.boolValue ? "true" : "false";
    break;
  case AttrValue::String:
    out += quoteString(v.stringValue);
    break;
  case AttrValue::Type:
    out += elementTypeName(v.typeValue);
    break;
  case AttrValue::Symbol:
    out += v.stringValue;
    break;
  case AttrValue::List:
    out += '[';
    for (size_t i = 0; i < v.elements.size(); ++i) {
      if (i)
        out += ", ";
      printAttrValue(out, v.elements[i]);
    }
    out += ']';
    break;
  }
}

void printTypes(std::string &out, const std::vector<TensorType> &types) {
  if (types.size() == 1) {
    out += types.front().str();
    return;
  }
  out += '(';
  for (size_t i = 0; i < types.size(); ++i) {
    if (i)
      out += ", ";
    out += types[i].str();
  }
  out += ')';
}

void printStatement(std::string &out, const Statement &st) {
  out += "  ";
  for (size_t i = 0; i < st.results.size(); ++i) {
    if (i)
      out += ", ";
    out += "%" + st.results[i];
  }
  out += " = " + st.op;
  if (st.op == "call") {
    out += " @" + st.callee + "(";
    for (size_t i = 0; i < st.operands.size(); ++i) {
      if (i)
        out += ", ";
      printOperand(out, st.operands[i]);
    }
    out += ")";
  } else {
    for (size_t i = 0; i < st.operands.size(); ++i) {
      out += i ? ", " : " ";
      printOperand(out, st.operands[i]);
    }
  }
  std::vector<const Attribute *> attrs;
  for (const Attribute &a : st.attrs)
    if (!a.isDefault)
      attrs.push_back(&a);
  std::stable_sort(
      attrs.begin(), attrs.end(),
      [](const Attribute *a, const Attribute *b) { return a->name < b->name; });
  if (!attrs.empty()) {
    out += " {";
    for (size_t i = 0; i < attrs.size(); ++i) {
      if (i)
        out += ", ";
      out += attrs[i]->name + " = ";
      printAttrValue(out, attrs[i]->value);
    }
    out += "}";
  }
  // The inferred types; a module that was not analysed keeps its
  // annotation.
  if (!st.resultTypes.empty()) {
    out += " : ";
    printTypes(out, st.resultTypes);
  } else if (st.annotation) {
    out += " : ";
    printTypes(out, *st.annotation);
  }
  out += "\n";
}

void printFunction(std::string &out, const Function &fn) {
  if (fn.isPrivate)
    out += "private ";
  out += "func @" + fn.name + "(";
  for (size_t i = 0; i < fn.params.size(); ++i) {
    if (i)
      out += ", ";
    out += "%" + fn.params[i].name + ": " + fn.params[i].type.str();
  }
  out += ") -> ";
  if (fn.results.size() == 1) {
    out += fn.results.front().str();
  } else {
    out += '(';
    for (size_t i = 0; i < fn.results.size(); ++i) {
      if (i)
        out += ", ";
      out += fn.results[i].str();
    }
    out += ')';
  }
  out += " {\n";
  for (const Statement &st : fn.body)
    printStatement(out, st);
  out += "  return";
  for (size_t i = 0; i < fn.returns.size(); ++i) {
    out += i ? ", " : " ";
    printOperand(out, fn.returns[i]);
  }
  out += "\n}\n";
}

} // namespace

std::string printModule(const Module &module) {
  std::string out = "module @" + module.name + "\n";
  for (const Function &fn : module.functions) {
    out += "\n";
    printFunction(out, fn);
  }
  return out;
}

} // namespace kina
