//===- NpyTest.cpp - Unit tests of kina-run's NPY reader and writer -------===//
//
// Tests src/kina-run/Npy.h against the NPY format description
// (numpy.lib.format): round trips of every dtype kina-run uses through the
// writer and the reader (0-d, empty and n-d shapes), the exact bytes NumPy
// 1.24 writes for a small array, version 2.0 and 3.0 headers, the header
// spellings NumPy accepts (any key order, either quote, no trailing comma,
// Python 2 longs, `=`/no byte order), reading from a stream that cannot
// seek (a pipe), and every error the reader reports, by the text of its
// reason.
//
//===----------------------------------------------------------------------===//
#include "Npy.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <streambuf>
#include <string>
#include <unistd.h>
#include <vector>

using namespace kina::npy;

namespace {

/// An NPY file with a hand-written header dict, padded like NumPy's.
std::string npyFile(unsigned major, const std::string &dict,
                    const std::string &data, unsigned minor = 0) {
  size_t prefix = major == 1 ? 10 : 12;
  std::string text = dict;
  size_t pad = 64 - (prefix + text.size() + 1) % 64;
  text += std::string(pad, ' ') + "\n";
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += static_cast<char>(minor);
  uint32_t n = static_cast<uint32_t>(text.size());
  for (unsigned i = 0; i < (major == 1 ? 2u : 4u); ++i)
    out += static_cast<char>((n >> (8 * i)) & 0xff);
  return out + text + data;
}

std::string bytesOf(const std::vector<float> &v) {
  return std::string(reinterpret_cast<const char *>(v.data()),
                     v.size() * sizeof(float));
}

ReadResult readString(const std::string &bytes, NpyArray &out) {
  std::istringstream in(bytes);
  return readNpy(in, out);
}

/// Expects reading `bytes` to fail with a reason containing `part`.
void expectError(const std::string &bytes, const std::string &part) {
  NpyArray a;
  ReadResult r = readString(bytes, a);
  ASSERT_FALSE(r.ok()) << "expected an error containing: " << part;
  EXPECT_NE(r.error.find(part), std::string::npos)
      << "error was: " << r.error << "\nexpected to contain: " << part;
}

/// A stream buffer over a string that cannot seek, as a pipe.
class PipeBuf : public std::streambuf {
public:
  explicit PipeBuf(std::string s) : text(std::move(s)) {
    char *b = text.data();
    setg(b, b, b + text.size());
  }

private:
  std::string text;
};

std::string tempPath(const std::string &name) {
  return ::testing::TempDir() + "npytest-" + std::to_string(getpid()) + "-" +
         name;
}

} // namespace

TEST(Npy, RoundTripEveryDtypeAndShape) {
  const std::vector<std::pair<std::string, size_t>> dtypes = {
      {"|b1", 1}, {"|i1", 1}, {"<i4", 4}, {"<i8", 8},
      {"<f2", 2}, {"<f4", 4}, {"<f8", 8}, {"<u2", 2}};
  const std::vector<std::vector<int64_t>> shapes = {
      {}, {0}, {5}, {2, 3}, {2, 0, 3}, {1, 2, 1, 2, 1, 2, 1, 2}};
  for (const auto &[descr, size] : dtypes) {
    EXPECT_EQ(itemSizeOf(descr), size) << descr;
    for (const auto &shape : shapes) {
      int64_t count = 1;
      for (int64_t d : shape)
        count *= d;
      std::string data(static_cast<size_t>(count) * size, '\0');
      for (size_t i = 0; i < data.size(); ++i)
        data[i] = descr == "|b1" ? static_cast<char>(i % 2)
                                 : static_cast<char>(i * 37 + 11);
      std::string file = npyHeader(descr, shape) + data;
      EXPECT_EQ(npyHeader(descr, shape).size() % 64, 0u);
      NpyArray a;
      ReadResult r = readString(file, a);
      ASSERT_TRUE(r.ok()) << descr << ": " << r.error;
      EXPECT_EQ(a.descr, descr);
      EXPECT_EQ(a.itemSize, size);
      EXPECT_EQ(a.shape, shape);
      EXPECT_EQ(a.numElements(), count);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data.data()) % kDataAlignment,
                0u);
      ASSERT_EQ(a.data.size(), data.size());
      EXPECT_EQ(std::memcmp(a.data.data(), data.data(), data.size()), 0);
    }
  }
}

TEST(Npy, HeaderIsWhatNumpyWrites) {
  // numpy 1.24: np.save(f, np.zeros((3, 4), np.float32)), first 128 bytes:
  // header length 0x76 = 118 = the 59-byte dict, 58 spaces and '\n'.
  std::string expected = std::string("\x93NUMPY\x01\x00\x76\x00", 10) +
                         "{'descr': '<f4', 'fortran_order': False, 'shape': "
                         "(3, 4), }" +
                         std::string(58, ' ') + "\n";
  EXPECT_EQ(npyHeader("<f4", {3, 4}), expected);
  EXPECT_NE(npyHeader("<f4", {7}).find("'shape': (7,), }"), std::string::npos);
  EXPECT_NE(npyHeader("|b1", {}).find("'shape': (), }"), std::string::npos);
}

TEST(Npy, WriterSwitchesToVersion2ForLongHeaders) {
  std::vector<int64_t> shape(30000, 1);
  std::string header = npyHeader("<f4", shape);
  ASSERT_GT(header.size(), 65536u);
  EXPECT_EQ(header[6], '\x02');
  EXPECT_EQ(header.size() % 64, 0u);
  NpyArray a;
  ReadResult r = readString(header + bytesOf({2.5f}), a);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(a.shape, shape);
  float v;
  std::memcpy(&v, a.data.data(), 4);
  EXPECT_EQ(v, 2.5f);
}

TEST(Npy, ReadsVersions2And3) {
  std::string dict =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  for (unsigned major : {1u, 2u, 3u}) {
    NpyArray a;
    ReadResult r = readString(npyFile(major, dict, bytesOf({1.f, -2.f})), a);
    ASSERT_TRUE(r.ok()) << "version " << major << ": " << r.error;
    EXPECT_EQ(a.shape, std::vector<int64_t>{2});
    float v[2];
    std::memcpy(v, a.data.data(), 8);
    EXPECT_EQ(v[0], 1.f);
    EXPECT_EQ(v[1], -2.f);
  }
}

TEST(Npy, AcceptsTheSpellingsNumpyAccepts) {
  std::string data = bytesOf({1, 2, 3, 4, 5, 6});
  const char *dicts[] = {
      "{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}",
      "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2, 3)}",
      "{'descr':'<f4','fortran_order':False,'shape':(2,3,),}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }",
      "{'descr': '=f4', 'fortran_order': False, 'shape': (2, 3), }",
      "{'descr': 'f4', 'fortran_order': False, 'shape': (2, 3), }",
      "  {  'descr' : '<f4' ,\t'fortran_order' : False , 'shape' : ( 2 , 3 ) }",
  };
  for (const char *d : dicts) {
    NpyArray a;
    ReadResult r = readString(npyFile(1, d, data), a);
    ASSERT_TRUE(r.ok()) << d << ": " << r.error;
    EXPECT_EQ(a.descr, "<f4") << d;
    EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3})) << d;
  }
  // One-byte types are byte-order free, whatever the file says.
  for (const char *d : {"<i1", ">i1", "|i1", "=i1"}) {
    NpyArray a;
    std::string dict = std::string("{'descr': '") + d +
                       "', 'fortran_order': False, 'shape': (1,), }";
    ASSERT_TRUE(readString(npyFile(1, dict, "\x05"), a).ok()) << d;
    EXPECT_EQ(a.descr, "|i1");
  }
  // A Fortran-order flag is an error even for one dim (kina-run reads only
  // what NumPy writes for C-order arrays).
  expectError(npyFile(1,
                      "{'descr': '<f4', 'fortran_order': True, 'shape': "
                      "(2, 3), }",
                      data),
              "Fortran order");
}

TEST(Npy, ReadsFromAStreamThatCannotSeek) {
  std::string file = npyHeader("<f4", {3}) + bytesOf({1, 2, 3});
  {
    PipeBuf buf(file);
    std::istream in(&buf);
    NpyArray a;
    ReadResult r = readNpy(in, a);
    ASSERT_TRUE(r.ok()) << r.error;
    EXPECT_EQ(a.shape, std::vector<int64_t>{3});
  }
  {
    PipeBuf buf(file.substr(0, file.size() - 1));
    std::istream in(&buf);
    NpyArray a;
    ReadResult r = readNpy(in, a);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error.find("truncated data"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("needs 12 bytes, the file holds 11"),
              std::string::npos)
        << r.error;
  }
  {
    PipeBuf buf(file + "x");
    std::istream in(&buf);
    NpyArray a;
    ReadResult r = readNpy(in, a);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error.find("bytes after"), std::string::npos) << r.error;
  }
}

TEST(Npy, Errors) {
  std::string good =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  std::string data = bytesOf({1, 2});
  auto withDict = [&](const std::string &dict) {
    return npyFile(1, dict, data);
  };

  expectError("", "not an NPY file");
  expectError("PK\x03\x04 a zip file", "not an NPY file");
  expectError("\x93NUMPY", "truncated NPY header");
  expectError(npyFile(4, good, data), "unsupported NPY format version 4.0");
  expectError(npyFile(1, good, data, 1), "unsupported NPY format version 1.1");
  expectError(std::string("\x93NUMPY\x01\x00\x76", 9), "header length");
  expectError(std::string("\x93NUMPY\x01\x00\x76\x00{'descr'", 17),
              "truncated NPY header");
  expectError(std::string("\x93NUMPY\x02\x00\x00\x00\x00\x40", 12),
              "larger than");

  std::string file = withDict(good);
  expectError(file.substr(0, file.size() - 3), "truncated data");
  expectError(file + "extra", "bytes after");

  expectError(withDict("{'descr': '>f4', 'fortran_order': False, 'shape': "
                       "(2,), }"),
              "big-endian");
  expectError(withDict("{'descr': '|O', 'fortran_order': False, 'shape': "
                       "(2,), }"),
              "object arrays");
  expectError(withDict("{'descr': [('a', '<f4')], 'fortran_order': False, "
                       "'shape': (2,), }"),
              "structured");
  expectError(withDict("{'descr': '<U3', 'fortran_order': False, 'shape': "
                       "(2,), }"),
              "unsupported dtype '<U3'");
  expectError(withDict("{'descr': '<M8[ns]', 'fortran_order': False, "
                       "'shape': (2,), }"),
              "unsupported dtype");
  expectError(withDict("{'descr': '|f4', 'fortran_order': False, 'shape': "
                       "(2,), }"),
              "no byte order");
  expectError(withDict("{'descr': '<b2', 'fortran_order': False, 'shape': "
                       "(1,), }"),
              "unsupported dtype");
  expectError(withDict("{'descr': '<f4', 'fortran_order': False}"),
              "lacks the key 'shape'");
  expectError(withDict("{'descr': '<f4', 'shape': (2,)}"),
              "lacks the key 'fortran_order'");
  expectError(withDict("{'descr': '<f4', 'fortran_order': False, 'shape': "
                       "(2,), 'extra': 1}"),
              "unexpected key 'extra'");
  expectError(withDict("{'descr': '<f4', 'descr': '<f4', 'fortran_order': "
                       "False, 'shape': (2,)}"),
              "appears twice");
  expectError(withDict("{'descr': '<f4', 'fortran_order': 'no', 'shape': "
                       "(2,), }"),
              "'fortran_order' is a string");
  expectError(withDict("{'descr': '<f4', 'fortran_order': False, 'shape': "
                       "[2], }"),
              "'shape' is a list");
  expectError(withDict("{'descr': '<f4', 'fortran_order': False, 'shape': "
                       "(2), }"),
              "'shape' is an integer");
  expectError(withDict("{'descr': '<f4', 'fortran_order': False, 'shape': "
                       "(-2,), }"),
              "negative size -2");
  expectError(withDict("{'descr': '<f4', 'fortran_order': False, 'shape': "
                       "(2.0,), }"),
              "not an integer");
  expectError(withDict("{'descr': '<f4', 'fortran_order': False, 'shape': "
                       "(4294967296, 4294967296), }"),
              "too many");
  expectError(withDict("{'descr': '<f4', 'fortran_order': False, 'shape': "
                       "(99999999999999999999,), }"),
              "number too large");
  expectError(withDict("('descr', '<f4')"), "is a tuple, not a dict");
  expectError(withDict("{'descr': '<f4', 'fortran_order': False, 'shape': "
                       "(2,), "),
              "does not parse");
  expectError(withDict("{'descr': '<f4', 'fortran_order': Nope, 'shape': "
                       "(2,), }"),
              "unexpected name 'Nope'");
  expectError(withDict("{'descr': '<f4} junk"), "does not parse");
  expectError(npyFile(1,
                      "{'descr': '|b1', 'fortran_order': False, 'shape': "
                      "(3,), }",
                      std::string("\x01\x00\x02", 3)),
              "boolean element 2 is the byte 2");
}

TEST(Npy, Files) {
  std::string path = tempPath("roundtrip.npy");
  std::vector<float> v = {0.5f, -1.f, 3.25f, 7.f};
  ASSERT_EQ(writeNpyFile(path, "<f4", {2, 2}, v.data(), 16), "");
  NpyArray a;
  ReadResult r = readNpyFile(path, a);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(std::memcmp(a.data.data(), v.data(), 16), 0);
  std::remove(path.c_str());

  r = readNpyFile(tempPath("missing.npy"), a);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error.find("cannot open"), std::string::npos) << r.error;

  std::string bad = tempPath("no-such-dir/out.npy");
  EXPECT_NE(writeNpyFile(bad, "<f4", {1}, v.data(), 4), "");
  std::ifstream check(bad);
  EXPECT_FALSE(check.good());
}

TEST(Npy, DtypeNames) {
  EXPECT_EQ(dtypeName("<f4"), "float32");
  EXPECT_EQ(dtypeName("<u2"), "uint16");
  EXPECT_EQ(dtypeName("|b1"), "bool");
  EXPECT_EQ(dtypeName("<c8"), "complex64");
  EXPECT_EQ(itemSizeOf("<f4"), 4u);
  EXPECT_EQ(itemSizeOf(">f4"), 0u);
  EXPECT_EQ(itemSizeOf("f4"), 0u); // not normalised
}
