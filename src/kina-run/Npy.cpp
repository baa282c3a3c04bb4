//===- Npy.cpp - Reading and writing NumPy .npy files ---------------------===//
//
// Implementation of Npy.h. The header dict is a Python literal; NumPy reads
// it with `ast.literal_eval`, so this file parses the same small grammar
// (dict, tuple, list, string, integer, True/False/None) with a recursive
// descent over the header bytes, then checks the three keys as NumPy's
// `read_array_header` does. Sizes are checked for overflow before anything
// is allocated.
//
//===----------------------------------------------------------------------===//
#include "Npy.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <new>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kina {
namespace npy {

static_assert(sizeof(void *) == 8, "kina-run assumes a 64-bit host");

//===----------------------------------------------------------------------===//
// AlignedBuffer
//===----------------------------------------------------------------------===//

AlignedBuffer::AlignedBuffer(size_t size) : length(size) {
  // aligned_alloc wants a multiple of the alignment; zero bytes still get a
  // real block so that data() is never null.
  size_t rounded =
      (size + kDataAlignment - 1) / kDataAlignment * kDataAlignment;
  if (rounded < size)
    throw std::bad_alloc();
  if (rounded == 0)
    rounded = kDataAlignment;
  void *p = std::aligned_alloc(kDataAlignment, rounded);
  if (!p)
    throw std::bad_alloc();
  bytes.reset(p);
}

void AlignedBuffer::Free::operator()(void *p) const { std::free(p); }

int64_t NpyArray::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLength = 6;
/// Largest header accepted (NumPy's own reader stops at 10000 bytes unless
/// told otherwise; this leaves room for any rank while bounding memory).
constexpr uint32_t kMaxHeaderLength = 1u << 24;

bool hostIsLittleEndian() {
  uint16_t one = 1;
  unsigned char first;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

//===----------------------------------------------------------------------===//
// The Python literal subset of the header
//===----------------------------------------------------------------------===//

struct PyValue {
  enum Kind { Str, Int, Bool, None, Tuple, List, Dict };
  Kind kind = None;
  std::string str;
  int64_t integer = 0;
  bool boolean = false;
  std::vector<PyValue> items;                       // Tuple, List
  std::vector<std::pair<std::string, PyValue>> map; // Dict (string keys)
};

const char *kindName(PyValue::Kind k) {
  switch (k) {
  case PyValue::Str:
    return "a string";
  case PyValue::Int:
    return "an integer";
  case PyValue::Bool:
    return "a boolean";
  case PyValue::None:
    return "None";
  case PyValue::Tuple:
    return "a tuple";
  case PyValue::List:
    return "a list";
  case PyValue::Dict:
    return "a dict";
  }
  return "a value";
}

class LiteralParser {
public:
  explicit LiteralParser(const std::string &text) : text(text) {}

  /// Parses the whole text as one value; false with `error` set otherwise.
  bool parse(PyValue &out) {
    if (!value(out, 0))
      return false;
    skipSpace();
    if (pos != text.size())
      return fail("unexpected text after the dict");
    return true;
  }
  std::string error;

private:
  const std::string &text;
  size_t pos = 0;

  bool fail(const std::string &why) {
    if (error.empty())
      error = why + " at header byte " + std::to_string(pos);
    return false;
  }
  void skipSpace() {
    while (pos < text.size() &&
           std::isspace(static_cast<unsigned char>(text[pos])))
      ++pos;
  }
  bool consume(char c) {
    skipSpace();
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }
  bool value(PyValue &out, unsigned depth) {
    if (depth > 32)
      return fail("nesting too deep");
    skipSpace();
    if (pos >= text.size())
      return fail("unexpected end of the header");
    char c = text[pos];
    if (c == '\'' || c == '"') {
      out.kind = PyValue::Str;
      return string(out.str);
    }
    if (c == '{')
      return dict(out, depth);
    if (c == '(' || c == '[') {
      out.kind = c == '(' ? PyValue::Tuple : PyValue::List;
      return sequence(out, c == '(' ? ')' : ']', depth);
    }
    if (c == '-' || c == '+' || std::isdigit(static_cast<unsigned char>(c)))
      return integer(out);
    if (std::isalpha(static_cast<unsigned char>(c))) {
      size_t start = pos;
      while (pos < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[pos])) ||
              text[pos] == '_'))
        ++pos;
      std::string word = text.substr(start, pos - start);
      if (word == "True" || word == "False") {
        out.kind = PyValue::Bool;
        out.boolean = word == "True";
        return true;
      }
      if (word == "None") {
        out.kind = PyValue::None;
        return true;
      }
      pos = start;
      return fail("unexpected name '" + word + "'");
    }
    return fail(std::string("unexpected character '") + c + "'");
  }
  bool string(std::string &out) {
    char quote = text[pos++];
    out.clear();
    while (pos < text.size() && text[pos] != quote) {
      char c = text[pos++];
      if (c == '\\') {
        if (pos >= text.size())
          break;
        c = text[pos++];
        if (c != '\\' && c != '\'' && c != '"')
          return fail("unsupported escape in a string");
      }
      if (c == '\n')
        return fail("newline inside a string");
      out += c;
    }
    if (pos >= text.size())
      return fail("unterminated string");
    ++pos;
    return true;
  }
  bool integer(PyValue &out) {
    size_t start = pos;
    bool negative = false;
    if (text[pos] == '-' || text[pos] == '+')
      negative = text[pos++] == '-';
    if (pos >= text.size() ||
        !std::isdigit(static_cast<unsigned char>(text[pos])))
      return fail("malformed number");
    uint64_t v = 0;
    while (pos < text.size() &&
           std::isdigit(static_cast<unsigned char>(text[pos]))) {
      unsigned d = static_cast<unsigned>(text[pos++] - '0');
      if (v > (UINT64_MAX - d) / 10) {
        pos = start;
        return fail("number too large");
      }
      v = v * 10 + d;
    }
    // Python 2 long literals (`3L`), as old NumPy wrote shapes.
    if (pos < text.size() && (text[pos] == 'L' || text[pos] == 'l'))
      ++pos;
    if (pos < text.size() &&
        (text[pos] == '.' || text[pos] == 'e' || text[pos] == 'E' ||
         std::isalpha(static_cast<unsigned char>(text[pos]))))
      return fail("not an integer");
    if (v > static_cast<uint64_t>(INT64_MAX)) {
      pos = start;
      return fail("number too large");
    }
    out.kind = PyValue::Int;
    out.integer = negative ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
    return true;
  }
  bool sequence(PyValue &out, char close, unsigned depth) {
    ++pos;
    bool sawComma = false;
    while (true) {
      if (consume(close))
        break;
      PyValue item;
      if (!value(item, depth + 1))
        return false;
      out.items.push_back(std::move(item));
      if (consume(',')) {
        sawComma = true;
        continue;
      }
      if (consume(close))
        break;
      return fail(std::string("expected ',' or '") + close + "'");
    }
    // `(3)` is the integer 3 in Python, not a tuple.
    if (close == ')' && out.items.size() == 1 && !sawComma) {
      PyValue inner = std::move(out.items.front());
      out = std::move(inner);
    }
    return true;
  }
  bool dict(PyValue &out, unsigned depth) {
    ++pos;
    out.kind = PyValue::Dict;
    while (true) {
      if (consume('}'))
        return true;
      skipSpace();
      if (pos >= text.size() || (text[pos] != '\'' && text[pos] != '"'))
        return fail("expected a string key");
      std::string key;
      if (!string(key))
        return false;
      if (!consume(':'))
        return fail("expected ':' after key '" + key + "'");
      PyValue v;
      if (!value(v, depth + 1))
        return false;
      for (const auto &kv : out.map)
        if (kv.first == key)
          return fail("key '" + key + "' appears twice");
      out.map.emplace_back(std::move(key), std::move(v));
      if (consume(','))
        continue;
      if (consume('}'))
        return true;
      return fail("expected ',' or '}'");
    }
  }
};

/// Checks a dtype string and normalises it (Npy.h, NpyArray::descr).
bool normaliseDescr(const std::string &descr, std::string &out,
                    size_t &itemSize, std::string &error) {
  size_t i = 0;
  char order = '=';
  if (!descr.empty() && std::strchr("<>|=", descr[0]))
    order = descr[i++];
  if (i >= descr.size() ||
      !std::isalpha(static_cast<unsigned char>(descr[i]))) {
    error = "unsupported dtype '" + descr + "'";
    return false;
  }
  char kind = descr[i++];
  size_t digits = i;
  uint64_t size = 0;
  while (i < descr.size() &&
         std::isdigit(static_cast<unsigned char>(descr[i])) && size < 1000)
    size = size * 10 + static_cast<uint64_t>(descr[i++] - '0');
  if (kind == 'O') {
    error = "object arrays ('" + descr +
            "') hold pickled Python objects, not numbers; kina-run reads "
            "numeric arrays only";
    return false;
  }
  if (i != descr.size() || digits == i || size == 0 ||
      !std::strchr("biufc", kind) || (kind == 'b' && size != 1) || size > 64) {
    error = "unsupported dtype '" + descr +
            "' (kina-run reads boolean, integer, float and complex arrays)";
    return false;
  }
  if (size > 1) {
    if (order == '>') {
      error = "big-endian data ('" + descr +
              "') is not supported: save a little-endian array, e.g. "
              "a.astype(a.dtype.newbyteorder('<'))";
      return false;
    }
    if (order == '|') {
      error = "dtype '" + descr + "' has no byte order but " +
              std::to_string(size) + "-byte items";
      return false;
    }
    if (order == '=' && !hostIsLittleEndian()) {
      error = "native byte order on a big-endian host is not supported";
      return false;
    }
    out = "<";
  } else {
    out = "|";
  }
  out += kind;
  out += std::to_string(size);
  itemSize = static_cast<size_t>(size);
  return true;
}

std::string shapeRepr(const std::vector<int64_t> &shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1)
    s += ",";
  return s + ")";
}

/// Reads exactly `n` bytes; false if the stream ends first.
bool readExactly(std::istream &in, char *p, size_t n) {
  in.read(p, static_cast<std::streamsize>(n));
  return static_cast<size_t>(in.gcount()) == n;
}

} // namespace

size_t itemSizeOf(const std::string &descr) {
  std::string norm, error;
  size_t size = 0;
  if (!normaliseDescr(descr, norm, size, error) || norm != descr)
    return 0;
  return size;
}

ReadResult readNpy(std::istream &in, NpyArray &out) {
  char prefix[kMagicLength + 2];
  in.read(prefix, sizeof(prefix));
  size_t got = static_cast<size_t>(in.gcount());
  if (got < kMagicLength || std::memcmp(prefix, kMagic, kMagicLength) != 0)
    return {"not an NPY file (it does not start with \"\\x93NUMPY\")"};
  if (got < sizeof(prefix))
    return {"truncated NPY header (the file ends in the version bytes)"};
  unsigned major = static_cast<unsigned char>(prefix[kMagicLength]);
  unsigned minor = static_cast<unsigned char>(prefix[kMagicLength + 1]);
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    return {"unsupported NPY format version " + std::to_string(major) + "." +
            std::to_string(minor) + " (1.0, 2.0 and 3.0 are supported)"};

  unsigned char lengthBytes[4] = {0, 0, 0, 0};
  size_t lengthSize = major == 1 ? 2 : 4;
  if (!readExactly(in, reinterpret_cast<char *>(lengthBytes), lengthSize))
    return {"truncated NPY header (the file ends in the header length)"};
  uint32_t headerLength = 0;
  for (size_t i = 0; i < lengthSize; ++i)
    headerLength |= static_cast<uint32_t>(lengthBytes[i]) << (8 * i);
  if (headerLength > kMaxHeaderLength)
    return {"NPY header of " + std::to_string(headerLength) +
            " bytes is larger than the " + std::to_string(kMaxHeaderLength) +
            " bytes kina-run accepts"};
  std::string header(headerLength, '\0');
  if (!readExactly(in, header.data(), headerLength))
    return {"truncated NPY header (the header length says " +
            std::to_string(headerLength) + " bytes)"};

  LiteralParser parser(header);
  PyValue dict;
  if (!parser.parse(dict))
    return {"the NPY header does not parse: " + parser.error};
  if (dict.kind != PyValue::Dict)
    return {std::string("the NPY header is ") + kindName(dict.kind) +
            ", not a dict"};
  const PyValue *descr = nullptr, *fortran = nullptr, *shape = nullptr;
  for (const auto &kv : dict.map) {
    if (kv.first == "descr")
      descr = &kv.second;
    else if (kv.first == "fortran_order")
      fortran = &kv.second;
    else if (kv.first == "shape")
      shape = &kv.second;
    else
      return {"the NPY header has the unexpected key '" + kv.first +
              "' (expected 'descr', 'fortran_order' and 'shape')"};
  }
  if (!descr || !fortran || !shape)
    return {std::string("the NPY header lacks the key '") +
            (!descr     ? "descr"
             : !fortran ? "fortran_order"
                        : "shape") +
            "'"};
  if (descr->kind == PyValue::List)
    return {"structured dtypes (a list as 'descr') are not supported"};
  if (descr->kind != PyValue::Str)
    return {std::string("'descr' is ") + kindName(descr->kind) +
            ", expected a string"};
  if (fortran->kind != PyValue::Bool)
    return {std::string("'fortran_order' is ") + kindName(fortran->kind) +
            ", expected True or False"};
  if (shape->kind != PyValue::Tuple)
    return {std::string("'shape' is ") + kindName(shape->kind) +
            ", expected a tuple of integers"};

  NpyArray array;
  std::string error;
  if (!normaliseDescr(descr->str, array.descr, array.itemSize, error))
    return {error};
  uint64_t count = 1;
  for (const PyValue &d : shape->items) {
    if (d.kind != PyValue::Int)
      return {std::string("'shape' holds ") + kindName(d.kind) +
              ", expected integers"};
    if (d.integer < 0)
      return {"'shape' holds the negative size " + std::to_string(d.integer)};
    array.shape.push_back(d.integer);
    if (__builtin_mul_overflow(count, static_cast<uint64_t>(d.integer), &count))
      return {"shape " + shapeRepr(array.shape) + "... has too many elements"};
  }
  if (fortran->boolean)
    return {"the array is in Fortran order (fortran_order: True); save a "
            "C-order array, e.g. numpy.ascontiguousarray(a)"};
  uint64_t byteCount;
  if (__builtin_mul_overflow(count, static_cast<uint64_t>(array.itemSize),
                             &byteCount) ||
      byteCount > static_cast<uint64_t>(INT64_MAX))
    return {"shape " + shapeRepr(array.shape) + " of '" + array.descr +
            "' has too many bytes"};

  std::string shapeText =
      "shape " + shapeRepr(array.shape) + " of '" + array.descr + "'";
  auto truncated = [&](uint64_t held) -> ReadResult {
    return {"truncated data: " + shapeText + " needs " +
            std::to_string(byteCount) + " bytes, the file holds " +
            std::to_string(held)};
  };
  auto trailing = [&]() -> ReadResult {
    return {"the file has bytes after the " + std::to_string(byteCount) +
            " bytes of data that " + shapeText + " needs"};
  };
  // A seekable stream tells its size, so that a header promising more than
  // the file holds allocates nothing; a pipe is read in bounded chunks.
  std::streampos here = in.tellg();
  bool sized = false;
  if (here != std::streampos(-1) && in.seekg(0, std::ios::end)) {
    std::streampos end = in.tellg();
    in.seekg(here);
    if (end != std::streampos(-1) && in) {
      uint64_t held = static_cast<uint64_t>(end - here);
      if (held < byteCount)
        return truncated(held);
      if (held > byteCount)
        return trailing();
      sized = true;
    }
  }
  in.clear();
  if (sized) {
    array.data = AlignedBuffer(static_cast<size_t>(byteCount));
    if (!readExactly(in, static_cast<char *>(array.data.data()),
                     static_cast<size_t>(byteCount)))
      return truncated(static_cast<uint64_t>(in.gcount()));
  } else {
    std::string data;
    constexpr size_t kChunk = size_t(1) << 26;
    while (data.size() < byteCount) {
      size_t want = static_cast<size_t>(
          std::min<uint64_t>(kChunk, byteCount - data.size()));
      size_t before = data.size();
      data.resize(before + want);
      in.read(&data[before], static_cast<std::streamsize>(want));
      size_t n = static_cast<size_t>(in.gcount());
      if (n < want)
        return truncated(before + n);
    }
    if (in.peek() != std::char_traits<char>::eof())
      return trailing();
    array.data = AlignedBuffer(static_cast<size_t>(byteCount));
    if (byteCount)
      std::memcpy(array.data.data(), data.data(), data.size());
  }
  if (array.descr == "|b1") {
    const unsigned char *b =
        static_cast<const unsigned char *>(array.data.data());
    for (uint64_t i = 0; i < byteCount; ++i)
      if (b[i] > 1)
        return {"boolean element " + std::to_string(i) + " is the byte " +
                std::to_string(b[i]) + ", expected 0 or 1"};
  }
  out = std::move(array);
  return {};
}

ReadResult readNpyFile(const std::string &path, NpyArray &out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    int err = errno;
    return {std::string("cannot open: ") + std::strerror(err)};
  }
  return readNpy(in, out);
}

std::string npyHeader(const std::string &descr,
                      const std::vector<int64_t> &shape) {
  // numpy.lib.format: keys sorted, repr() of each value, ", " after each.
  std::string dict = "{'descr': '" + descr +
                     "', 'fortran_order': False, 'shape': " + shapeRepr(shape) +
                     ", }";
  // The dict, padded with spaces and ended by '\n', so that the data starts
  // at a multiple of 64 bytes (magic 6 + version 2 + length 2 or 4).
  auto padded = [&](size_t prefix) {
    size_t length = dict.size() + 1;
    size_t pad = 64 - (prefix + length) % 64;
    return dict + std::string(pad, ' ') + "\n";
  };
  std::string text = padded(10);
  unsigned major = 1;
  if (text.size() > 0xffff) {
    major = 2;
    text = padded(12);
  }
  std::string out(kMagic, kMagicLength);
  out += static_cast<char>(major);
  out += '\0';
  uint32_t n = static_cast<uint32_t>(text.size());
  for (unsigned i = 0; i < (major == 1 ? 2u : 4u); ++i)
    out += static_cast<char>((n >> (8 * i)) & 0xff);
  return out + text;
}

std::string writeNpyFile(const std::string &path, const std::string &descr,
                         const std::vector<int64_t> &shape, const void *bytes,
                         size_t size) {
  std::string header = npyHeader(descr, shape);
  std::string tmpl = path + ".tmp-XXXXXX";
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  int fd = mkstemp(name.data());
  if (fd < 0)
    return std::strerror(errno);
  // mkstemp creates 0600; give the file the mode an ordinary create would.
  mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  auto writeAll = [&](const char *p, size_t n) {
    while (n > 0) {
      ssize_t w = ::write(fd, p, n);
      if (w < 0) {
        if (errno == EINTR)
          continue;
        return false;
      }
      p += w;
      n -= static_cast<size_t>(w);
    }
    return true;
  };
  bool ok = writeAll(header.data(), header.size()) &&
            writeAll(static_cast<const char *>(bytes), size);
  int err = errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && std::rename(name.data(), path.c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    std::remove(name.data());
    return std::strerror(err);
  }
  return "";
}

std::string dtypeName(const std::string &descr) {
  static const std::map<std::string, std::string> names = {
      {"|b1", "bool"},      {"|i1", "int8"},       {"<i2", "int16"},
      {"<i4", "int32"},     {"<i8", "int64"},      {"|u1", "uint8"},
      {"<u2", "uint16"},    {"<u4", "uint32"},     {"<u8", "uint64"},
      {"<f2", "float16"},   {"<f4", "float32"},    {"<f8", "float64"},
      {"<c8", "complex64"}, {"<c16", "complex128"}};
  auto it = names.find(descr);
  return it == names.end() ? descr : it->second;
}

} // namespace npy
} // namespace kina
