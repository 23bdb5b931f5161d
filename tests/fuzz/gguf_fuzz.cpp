// The GGUF header reader (record/model_identity.h read_gguf): any file gives a GgufInfo or a
// ModelFileError, never a crash or an allocation beyond the file's size.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_check.h"
#include "fuzz/memfd.h"
#include "record/model_identity.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const dyno::fuzz::MemFile file(data, size);
  try {
    const dyno::record::GgufInfo info = dyno::record::read_gguf(file.path());
    FUZZ_CHECK(info.header_size <= size);
    FUZZ_CHECK(info.fingerprint.size() == 64);
    FUZZ_CHECK(info.metadata.size() <= info.metadata_count);
    std::uint64_t tensors = 0;
    for (const auto& [type, count] : info.tensor_types) tensors += count;
    FUZZ_CHECK(tensors == info.tensor_count);
    FUZZ_CHECK(info.quantization.empty() == (info.tensor_count == 0));
  } catch (const dyno::record::ModelFileError& error) {
    FUZZ_CHECK(!error.offset() || *error.offset() <= size);
  }
  return 0;
}
