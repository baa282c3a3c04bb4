//===- OpTableDocTest.cpp - docs/language.md agrees with the op table -----===//
//
// The `docs` test docs.op_table: the operations and attributes that
// docs/language.md documents are exactly those of kinac's op table
// (include/kina/OpTable.h). It checks that the page's "Index of operations"
// lists every op of the table and no other, that each op is named in the
// "Operations" sections after the index, and that the "Attributes" table
// gives every op's attributes (no more, no fewer) and marks exactly the
// required ones `required`. It also checks the table itself: sorted by
// name (lookupOp bisects), every name found by lookupOp.
//
//===----------------------------------------------------------------------===//
#include "kina/OpTable.h"

#include "llvm/ADT/StringRef.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#ifndef KINA_SOURCE_DIR
#error "KINA_SOURCE_DIR must name the source tree"
#endif

namespace {

std::vector<std::string> readLines(const std::string &path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

const std::vector<std::string> &languageDoc() {
  static const std::vector<std::string> lines =
      readLines(KINA_SOURCE_DIR "/docs/language.md");
  return lines;
}

/// The words inside `...` spans of `text`; a span holding several words
/// separated by spaces (`neg abs exp`) gives each of them.
std::vector<std::string> codeWords(llvm::StringRef text) {
  std::vector<std::string> words;
  while (true) {
    size_t open = text.find('`');
    if (open == llvm::StringRef::npos)
      break;
    size_t close = text.find('`', open + 1);
    if (close == llvm::StringRef::npos)
      break;
    llvm::SmallVector<llvm::StringRef> parts;
    text.slice(open + 1, close).split(parts, ' ', -1, /*KeepEmpty=*/false);
    for (llvm::StringRef p : parts)
      words.push_back(p.str());
    text = text.drop_front(close + 1);
  }
  return words;
}

/// The lines of the section that starts at the heading `heading` (exact
/// line) and ends before the next heading of the same or a higher level.
std::vector<std::string> section(const std::string &heading) {
  const std::vector<std::string> &doc = languageDoc();
  size_t level = heading.find(' ');
  std::vector<std::string> out;
  bool inside = false;
  for (const std::string &line : doc) {
    if (inside) {
      size_t hashes = line.find_first_not_of('#');
      if (hashes > 0 && hashes != std::string::npos && hashes <= level &&
          line[hashes] == ' ')
        break;
      out.push_back(line);
    } else if (line == heading) {
      inside = true;
    }
  }
  EXPECT_TRUE(inside) << "docs/language.md has no heading '" << heading << "'";
  return out;
}

/// The cells of a Markdown table row `| a | b |` (trimmed), or empty for a
/// line that is no row.
std::vector<std::string> cells(llvm::StringRef line) {
  line = line.trim();
  if (!line.starts_with("|") || !line.ends_with("|"))
    return {};
  llvm::SmallVector<llvm::StringRef> parts;
  line.drop_front().drop_back().split(parts, '|');
  std::vector<std::string> out;
  for (llvm::StringRef p : parts)
    out.push_back(p.trim().str());
  return out;
}

std::set<std::string> tableOps() {
  std::set<std::string> ops;
  for (const kina::OpDesc &d : kina::opTable())
    ops.insert(d.name);
  return ops;
}

TEST(OpTable, SortedAndFound) {
  llvm::ArrayRef<kina::OpDesc> table = kina::opTable();
  ASSERT_FALSE(table.empty());
  for (size_t i = 1; i < table.size(); ++i)
    EXPECT_LT(llvm::StringRef(table[i - 1].name),
              llvm::StringRef(table[i].name))
        << "the op table must be sorted by name";
  for (const kina::OpDesc &d : table) {
    EXPECT_EQ(kina::lookupOp(d.name), &d) << d.name;
    EXPECT_LE(d.minOperands, d.maxOperands) << d.name;
    EXPECT_NE(d.elementTypes, 0u) << d.name;
  }
  EXPECT_EQ(kina::lookupOp("no_such_op"), nullptr);
  EXPECT_EQ(kina::opNames().size(), table.size());
}

TEST(OpTableDoc, IndexListsExactlyTheTable) {
  std::set<std::string> documented;
  for (const std::string &line : section("### Index of operations")) {
    std::vector<std::string> row = cells(line);
    if (row.size() != 2)
      continue;
    for (const std::string &w : codeWords(row[1]))
      EXPECT_TRUE(documented.insert(w).second)
          << "'" << w << "' is listed twice in the index";
  }
  std::set<std::string> ops = tableOps();
  for (const std::string &op : ops)
    EXPECT_TRUE(documented.count(op))
        << "op '" << op
        << "' of the op table is missing from docs/language.md's index";
  for (const std::string &w : documented)
    EXPECT_TRUE(ops.count(w))
        << "docs/language.md's index lists '" << w
        << "', which is no op of the op table (include/kina/OpTable.h)";
}

TEST(OpTableDoc, EveryOpIsDescribed) {
  // Each op is named in the sections after the index (the descriptions).
  std::set<std::string> named;
  bool afterIndex = false;
  for (const std::string &line : section("## Operations")) {
    if (line.rfind("### ", 0) == 0)
      afterIndex = line != "### Index of operations";
    if (!afterIndex)
      continue;
    for (const std::string &w : codeWords(line))
      named.insert(w);
  }
  for (const std::string &op : tableOps())
    EXPECT_TRUE(named.count(op))
        << "op '" << op << "' has no description in docs/language.md's "
        << "\"Operations\"";
}

TEST(OpTableDoc, AttributesTableMatches) {
  // (op, attribute) -> the default cell says `required`.
  std::map<std::pair<std::string, std::string>, bool> documented;
  for (const std::string &line : section("### Attributes")) {
    std::vector<std::string> row = cells(line);
    if (row.size() != 4 || row[0] == "op" || row[0].rfind("---", 0) == 0)
      continue;
    std::vector<std::string> ops;
    for (const std::string &w : codeWords(row[0])) {
      std::string name = w;
      if (!name.empty() && name.back() == ',')
        name.pop_back();
      if (!name.empty() && name.back() == '*') {
        // `reduce_*`: every op of the table with that prefix.
        std::string prefix = name.substr(0, name.size() - 1);
        for (const kina::OpDesc &d : kina::opTable())
          if (llvm::StringRef(d.name).starts_with(prefix))
            ops.push_back(d.name);
      } else {
        ops.push_back(name);
      }
    }
    bool required = row[3] == "required";
    for (const std::string &op : ops)
      for (std::string attr : codeWords(row[1])) {
        if (!attr.empty() && attr.back() == ',')
          attr.pop_back();
        EXPECT_TRUE(
            documented.emplace(std::make_pair(op, attr), required).second)
            << op << " " << attr << " is documented twice";
      }
  }
  std::map<std::pair<std::string, std::string>, bool> table;
  for (const kina::OpDesc &d : kina::opTable())
    for (const kina::AttrDesc &a : d.attrs)
      table.emplace(std::make_pair(std::string(d.name), std::string(a.name)),
                    a.required());
  for (const auto &[key, required] : table) {
    auto it = documented.find(key);
    if (it == documented.end()) {
      ADD_FAILURE() << "attribute '" << key.second << "' of '" << key.first
                    << "' is missing from docs/language.md's Attributes table";
      continue;
    }
    EXPECT_EQ(it->second, required)
        << "'" << key.first << "' " << key.second << ": the op table says "
        << (required ? "required" : "optional") << ", the page does not";
  }
  for (const auto &[key, required] : documented)
    EXPECT_TRUE(table.count(key))
        << "docs/language.md documents attribute '" << key.second << "' of '"
        << key.first << "', which the op table does not have";
}

} // namespace
