//===- DotEmitter.cpp - `--emit=dot`: the program and its kernels ---------===//
//
// Writes one Graphviz `digraph` for a module: one cluster per function
// holding a node per parameter (blue, `invhouse`), per statement (its op,
// result names and types, source line) and per result (gold, `house`),
// edges from each value's definition to its uses labelled with the value's
// name, and the kernels the pipeline produced (KernelReport, Kernels.h)
// as clusters around the statements they compute. A statement computed by
// several kernels (softmax's reductions, an elementwise producer fused
// into two consumers) joins those kernels into one cluster listing them
// all, since a Graphviz node lies in one cluster only. Each kernel is also
// written as a `// kernel` comment line (index, op, cuda symbol, source
// loop count, source lines), the record the tests compare with --emit=mlir-llvm
// and
// --emit=mlir-gpu. Everything is emitted in program order: the output is
// deterministic.
//
//===----------------------------------------------------------------------===//
#include "Kernels.h"

#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

namespace kina {
namespace driver {
namespace {

/// A DOT string literal's contents for `text` (quotes and backslashes
/// escaped; `\n` is left to the caller, who writes DOT's own line breaks).
std::string escape(llvm::StringRef text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out;
}

SourcePoint pointOf(mlir::Location loc) {
  if (auto flc = llvm::dyn_cast<mlir::FileLineColLoc>(loc))
    return {flc.getLine(), flc.getColumn()};
  return {0, 0};
}

std::string typesOf(const std::vector<TensorType> &types) {
  std::string s;
  for (size_t i = 0; i < types.size(); ++i)
    s += (i ? ", " : "") + types[i].str();
  return s;
}

/// The text of one kernel for labels and comments: `#3 linalg.generic`
/// (cuda: with its symbol).
std::string kernelTitle(size_t index, const KernelInfo &k) {
  std::string s = "#" + std::to_string(index) + " " + k.op;
  if (!k.name.empty())
    s += " " + k.name;
  if (k.alternativeOf)
    s += " (scalar twin of #" + std::to_string(*k.alternativeOf) + ")";
  return s;
}

void emitFunction(llvm::raw_ostream &os, const Function &fn, size_t fnIndex,
                  const FunctionKernels *kernels) {
  std::string prefix = "f" + std::to_string(fnIndex) + "_";
  os << "  subgraph \"cluster_" << prefix << "fn\" {\n";
  os << "    label=\"@" << escape(fn.name) << (fn.isPrivate ? " (private)" : "")
     << "\"; labeljust=l; style=rounded; color=gray40; fontname=\"Helvetica-"
        "Bold\";\n";

  // Value name -> defining node, and statement location -> statement index.
  std::map<std::string, std::string> definedBy;
  std::map<SourcePoint, size_t> statementAt;
  for (size_t i = 0; i < fn.params.size(); ++i) {
    const Param &p = fn.params[i];
    std::string id = prefix + "p" + std::to_string(i);
    definedBy[p.name] = id;
    os << "    \"" << id << "\" [shape=invhouse, style=filled, "
       << "fillcolor=\"#cfe2f3\", label=\"%" << escape(p.name) << "\\n"
       << escape(p.type.str()) << "\\nparameter " << i << ", line "
       << pointOf(p.loc).first << "\"];\n";
  }
  for (size_t i = 0; i < fn.body.size(); ++i)
    statementAt[pointOf(fn.body[i].loc)] = i;

  // Kernels grouped into clusters: kernels sharing a statement are one
  // group (union-find over kernels, keyed by statement).
  std::vector<std::vector<size_t>> groups; // kernel indices per group
  std::map<size_t, size_t> groupOfStatement;
  if (kernels) {
    llvm::EquivalenceClasses<size_t> classes;
    std::map<size_t, size_t> firstKernelOf; // statement -> a kernel
    for (size_t k = 0; k < kernels->kernels.size(); ++k) {
      classes.insert(k);
      for (const SourcePoint &point : kernels->kernels[k].sources) {
        auto it = statementAt.find(point);
        if (it == statementAt.end())
          continue;
        auto [first, inserted] = firstKernelOf.try_emplace(it->second, k);
        if (!inserted)
          classes.unionSets(first->second, k);
      }
    }
    std::map<size_t, size_t> groupOfLeader;
    for (size_t k = 0; k < kernels->kernels.size(); ++k) {
      size_t leader = classes.getLeaderValue(k);
      auto [it, inserted] = groupOfLeader.try_emplace(leader, groups.size());
      if (inserted)
        groups.emplace_back();
      groups[it->second].push_back(k);
    }
    for (const auto &[statement, kernel] : firstKernelOf)
      groupOfStatement[statement] =
          groupOfLeader[classes.getLeaderValue(kernel)];
  }

  auto statementNode = [&](size_t i, llvm::StringRef indent) {
    const Statement &s = fn.body[i];
    std::string results;
    for (size_t r = 0; r < s.results.size(); ++r)
      results += (r ? ", %" : "%") + s.results[r];
    std::string op = s.op == "call" ? "call @" + s.callee : s.op;
    os << indent << "\"" << prefix << "s" << i << "\" [shape=box, style="
       << "\"rounded,filled\", fillcolor=white, label=\"" << escape(op) << "\\n"
       << escape(results) << " : " << escape(typesOf(s.resultTypes))
       << "\\nline " << pointOf(s.loc).first << "\"];\n";
  };

  // Statements outside every kernel, then each kernel group's cluster.
  for (size_t i = 0; i < fn.body.size(); ++i)
    if (!groupOfStatement.count(i))
      statementNode(i, "    ");
  for (size_t g = 0; g < groups.size(); ++g) {
    std::vector<size_t> members;
    for (const auto &[statement, group] : groupOfStatement)
      if (group == g)
        members.push_back(statement);
    bool orphan = members.empty();
    const std::vector<size_t> &ks = groups[g];
    std::string title = ks.size() == 1 ? "kernel " + std::to_string(ks.front())
                                       : std::to_string(ks.size()) + " kernels";
    std::string list;
    for (size_t k : ks)
      list += "\\l" + escape(kernelTitle(k, kernels->kernels[k]));
    os << "    subgraph \"cluster_" << prefix << "k" << g << "\" {\n";
    os << "      label=\"" << title << list << "\\l\"; labeljust=l; "
       << "style=\"filled,dashed\"; fillcolor=\"#fdf2e9\"; color=\"#e67e22\";"
       << " fontname=Helvetica;\n";
    for (size_t k : ks) {
      const KernelInfo &kernel = kernels->kernels[k];
      os << "      // kernel " << k << " " << kernel.op;
      if (!kernel.name.empty())
        os << " " << kernel.name;
      os << " loops " << kernel.loops << " lines";
      std::set<unsigned> lines;
      for (const SourcePoint &point : kernel.sources)
        if (statementAt.count(point))
          lines.insert(point.first);
      for (unsigned line : lines)
        os << " " << line;
      os << "\n";
    }
    for (size_t statement : members)
      statementNode(statement, "      ");
    if (orphan)
      os << "      \"" << prefix << "k" << g << "_note\" [shape=plaintext, "
         << "label=\"(no Kina statement: bookkeeping)\"];\n";
    os << "    }\n";
  }

  // Results.
  for (size_t i = 0; i < fn.returns.size(); ++i) {
    std::string type = i < fn.results.size() ? fn.results[i].str() : "";
    os << "    \"" << prefix << "r" << i << "\" [shape=house, style=filled, "
       << "fillcolor=\"#fff2cc\", label=\"result " << i << "\\n"
       << escape(type) << "\\nline " << pointOf(fn.returnLoc).first << "\"];\n";
  }

  // Edges: definition -> use, one per (definition, use, name).
  auto edge = [&](const std::string &from, const std::string &to,
                  const std::string &name) {
    os << "    \"" << from << "\" -> \"" << to << "\" [label=\"%"
       << escape(name) << "\"];\n";
  };
  for (size_t i = 0; i < fn.body.size(); ++i) {
    const Statement &s = fn.body[i];
    std::set<std::string> seen;
    for (const Operand &o : s.operands)
      if (o.kind == Operand::Value && seen.insert(o.name).second)
        if (auto it = definedBy.find(o.name); it != definedBy.end())
          edge(it->second, prefix + "s" + std::to_string(i), o.name);
    for (const std::string &r : s.results)
      definedBy[r] = prefix + "s" + std::to_string(i);
  }
  for (size_t i = 0; i < fn.returns.size(); ++i)
    if (auto it = definedBy.find(fn.returns[i].name); it != definedBy.end())
      edge(it->second, prefix + "r" + std::to_string(i), fn.returns[i].name);
  os << "  }\n";
}

} // namespace

std::string emitDot(const Module &module, const KernelReport &report,
                    llvm::StringRef symbolPrefix) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "// kinac --emit=dot: module @" << module.name << ", target "
     << report.target << "\n";
  os << "// Nodes: parameters (blue), statements, results (gold); clusters "
        "(orange): the kernels the pipeline produced.\n";
  os << "digraph \"" << escape(module.name) << "\" {\n";
  os << "  graph [rankdir=TB, fontname=Helvetica, fontsize=11, "
        "nodesep=0.3, ranksep=0.35];\n";
  os << "  node [fontname=Helvetica, fontsize=10];\n";
  os << "  edge [fontname=Helvetica, fontsize=9, color=gray30];\n";
  for (size_t i = 0; i < module.functions.size(); ++i) {
    const Function &fn = module.functions[i];
    // MLIRGen names the IR function after the Kina one, with the prefix.
    const FunctionKernels *kernels =
        report.lookup((symbolPrefix + fn.name).str());
    emitFunction(os, fn, i, kernels);
  }
  os << "}\n";
  return text;
}

} // namespace driver
} // namespace kina
