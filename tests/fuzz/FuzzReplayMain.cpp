//===- FuzzReplayMain.cpp - Replays inputs through a fuzz target ----------===//
//
// A main() for the fuzz targets when they are not built with libFuzzer
// (every normal or sanitizer build): runs LLVMFuzzerTestOneInput once on
// each file named on the command line, recursing into directories in sorted
// order, and prints how many inputs it ran. A finding aborts the process
// (non-zero exit: the ctest fails) after naming the input. Used by ctest to
// replay tests/fuzz/regressions and the seed corpus on every run.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace {

void collect(const std::filesystem::path &path,
             std::vector<std::filesystem::path> &files) {
  if (std::filesystem::is_directory(path)) {
    std::vector<std::filesystem::path> entries;
    for (const auto &entry : std::filesystem::directory_iterator(path))
      entries.push_back(entry.path());
    std::sort(entries.begin(), entries.end());
    for (const auto &entry : entries)
      collect(entry, files);
  } else {
    files.push_back(path);
  }
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::filesystem::path> files;
  for (int i = 1; i < argc; ++i) {
    if (!std::filesystem::exists(argv[i])) {
      std::fprintf(stderr, "replay: no such file or directory: %s\n", argv[i]);
      return 2;
    }
    collect(argv[i], files);
  }
  for (const auto &file : files) {
    std::ifstream in(file, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)),
                      std::istreambuf_iterator<char>());
    std::fprintf(stderr, "replay: %s\n", file.c_str());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(bytes.data()),
                           bytes.size());
  }
  std::printf("replayed %zu inputs\n", files.size());
  return 0;
}
