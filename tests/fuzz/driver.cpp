// The fuzz targets' main in the normal build (without libFuzzer): runs LLVMFuzzerTestOneInput
// over every file named on the command line, or every regular file below a directory named
// there, in path order. A crash, a sanitizer report or an uncaught exception fails the run;
// so does finding no input at all (a corpus path that went missing).
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

namespace fs = std::filesystem;

bool collect(const fs::path& arg, std::vector<fs::path>& files) {
  std::error_code ec;
  if (fs::is_directory(arg, ec)) {
    for (const auto& entry : fs::recursive_directory_iterator(arg, ec)) {
      if (entry.is_regular_file()) files.push_back(entry.path());
    }
    return !ec;
  }
  if (fs::is_regular_file(arg, ec)) {
    files.push_back(arg);
    return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    if (!collect(argv[i], files)) {
      std::fprintf(stderr, "error: %s: not a readable file or directory\n", argv[i]);
      return 2;
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "error: no input files; give corpus files or directories\n");
    return 2;
  }
  std::sort(files.begin(), files.end());
  double slowest_s = 0.0;
  std::string slowest;
  for (const fs::path& file : files) {
    std::ifstream in(file, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) {
      std::fprintf(stderr, "error: %s: read error\n", file.c_str());
      return 1;
    }
    const auto start = std::chrono::steady_clock::now();
    // Names the input first, so a crash's report follows the file that caused it.
    std::fprintf(stderr, "running %s (%zu bytes)\n", file.c_str(), bytes.size());
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (s > slowest_s) {
      slowest_s = s;
      slowest = file.string();
    }
  }
  std::fprintf(stderr, "%zu inputs ran; slowest %.3f s (%s)\n", files.size(), slowest_s,
               slowest.c_str());
  return 0;
}
