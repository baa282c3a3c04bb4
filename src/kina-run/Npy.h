//===- Npy.h - Reading and writing NumPy .npy files -----------------------===//
//
// The subset of NumPy's NPY format (numpy.lib.format, "NPY format
// description", versions 1.0, 2.0 and 3.0) that kina-run needs: one array of
// a simple dtype (boolean, signed or unsigned integer, float, complex) in
// C order, little-endian or byte-order free. The header, a Python dict
// literal `{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }`, is
// parsed with a small tokenizer (any key order, either quote, any spacing),
// and everything else is an error with a reason: Fortran order, big-endian
// data, object and structured dtypes, a truncated file, trailing bytes, a
// header that does not parse. Arrays are read into 64-byte aligned memory
// (the alignment kinac's runtime gives its own buffers). Writing follows
// `numpy.save`: the same dict, version 1.0 (2.0 when the header is longer
// than 65535 bytes), the header padded so the data starts at a multiple of
// 64 (without the spare spaces newer NumPy adds for growing arrays). No
// library was used: docs/dependencies.md says why.
//
//===----------------------------------------------------------------------===//
#ifndef KINA_RUN_NPY_H
#define KINA_RUN_NPY_H

#include <cstddef>
#include <cstdint>
#include <istream>
#include <memory>
#include <string>
#include <vector>

namespace kina {
namespace npy {

/// Alignment in bytes of the data of every NpyArray.
inline constexpr size_t kDataAlignment = 64;

/// A block of `size` bytes aligned to kDataAlignment (never null, also for
/// zero bytes), freed on destruction.
class AlignedBuffer {
public:
  AlignedBuffer() = default;
  /// Allocates `size` bytes (uninitialised); throws std::bad_alloc.
  explicit AlignedBuffer(size_t size);
  void *data() { return bytes.get(); }
  const void *data() const { return bytes.get(); }
  size_t size() const { return length; }

private:
  struct Free {
    void operator()(void *p) const;
  };
  std::unique_ptr<void, Free> bytes;
  size_t length = 0;
};

/// One array read from or to be written to an NPY file.
struct NpyArray {
  /// The dtype as NumPy's `dtype.str` spells it, normalised: byte order
  /// `<` for multi-byte types and `|` for one-byte types, then the kind
  /// (`b`, `i`, `u`, `f`, `c`) and the item size in bytes: `<f4`, `|b1`,
  /// `|i1`, `<u2`.
  std::string descr;
  /// Item size in bytes (the number in `descr`).
  size_t itemSize = 0;
  /// The shape; empty for a 0-d array (one element).
  std::vector<int64_t> shape;
  /// The elements in C order, itemSize * numElements() bytes.
  AlignedBuffer data;

  /// Product of the shape (1 for a 0-d array).
  int64_t numElements() const;
};

/// What reading an array produced: an empty `error` on success, else the
/// reason (without the file name; the caller adds it).
struct ReadResult {
  std::string error;
  bool ok() const { return error.empty(); }
};

/// Reads one array from `in`, which must hold exactly one NPY file: the
/// magic string, version 1.0/2.0/3.0, the header, the data and nothing more.
/// Errors: an unreadable or truncated header, an unsupported version, a
/// header that is not a dict of exactly `descr`, `fortran_order`, `shape`,
/// a dtype that is not simple (structured, object, strings, dates),
/// big-endian, `fortran_order: True` (for more than one element), negative
/// dims or a byte count that overflows, fewer or more data bytes than the
/// header says, and a boolean byte other than 0 or 1.
ReadResult readNpy(std::istream &in, NpyArray &out);

/// Opens `path` and reads it with readNpy; a file that cannot be opened is
/// an error naming the system's reason.
ReadResult readNpyFile(const std::string &path, NpyArray &out);

/// Item size and validity of a normalised descr (`<f4` -> 4); 0 if `descr`
/// is not one readNpy would produce.
size_t itemSizeOf(const std::string &descr);

/// The complete header (magic, version, length, dict, padding) numpy.save
/// would write for an array of `descr` and `shape`, C order. Version 1.0,
/// or 2.0 when the dict does not fit in 65535 bytes.
std::string npyHeader(const std::string &descr,
                      const std::vector<int64_t> &shape);

/// Writes `descr`, `shape` and `bytes` (C order, itemSize * product(shape)
/// bytes) to `path` through a temporary file beside it and a rename, so a
/// failure leaves no partial file and an existing file untouched. Returns
/// an empty string on success, else the system's reason.
std::string writeNpyFile(const std::string &path, const std::string &descr,
                         const std::vector<int64_t> &shape, const void *bytes,
                         size_t size);

/// A readable name for a descr, NumPy's: `<f4` -> "float32", `|b1` ->
/// "bool", `<u2` -> "uint16"; the descr itself for anything else.
std::string dtypeName(const std::string &descr);

} // namespace npy
} // namespace kina

#endif // KINA_RUN_NPY_H
