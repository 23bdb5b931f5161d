// The safetensors header reader (record/model_identity.h read_safetensors): any file gives a
// SafetensorsInfo or a ModelFileError, never a crash or an allocation beyond the file's size.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_check.h"
#include "fuzz/memfd.h"
#include "record/model_identity.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const dyno::fuzz::MemFile file(data, size);
  try {
    const dyno::record::SafetensorsInfo info = dyno::record::read_safetensors({file.path()});
    FUZZ_CHECK(info.files.size() == 1);
    FUZZ_CHECK(info.fingerprint.size() == 64);
    std::uint64_t tensors = 0;
    for (const auto& [dtype, count] : info.dtypes) tensors += count;
    FUZZ_CHECK(tensors == info.tensor_count);
  } catch (const dyno::record::ModelFileError& error) {
    FUZZ_CHECK(!error.offset() || *error.offset() <= size);
  }
  return 0;
}
