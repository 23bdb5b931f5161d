// Reading the small files of sysfs and procfs (amdgpu, RAPL, host samplers).
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>

namespace dyno::telemetry {

/// A read: the text, or the errno of the failure (e.g. EACCES for RAPL's root-only files).
struct KernelFile {
  std::optional<std::string> text;
  int error = 0;
};

/// Reads at most `limit` bytes of `path` (one open, reads until EOF, retrying EINTR).
/// `strip` removes trailing whitespace (sysfs attributes end in a newline).
KernelFile read_kernel_file(const std::filesystem::path& path, bool strip = true,
                            std::size_t limit = std::size_t{4} << 20);

}  // namespace dyno::telemetry
