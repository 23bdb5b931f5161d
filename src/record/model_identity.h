// Model identity readers: what model a run served, read from the model files themselves.
//
// GGUF (llama.cpp) and safetensors (Hugging Face) files are parsed only as far as their
// headers; tensor data is never read into memory. Every length and count in a file is checked
// against the bytes that remain in the file before anything is allocated, so a truncated or
// hostile file gives a ModelFileError, never a crash or a huge allocation.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "error/error.h"

namespace dyno::record {

/// A model file that cannot be read or is malformed. what() names the file, the problem and,
/// where there is one, the byte offset at which it was found.
class ModelFileError : public Error {
 public:
  ModelFileError(const std::filesystem::path& file, const std::string& problem);
  ModelFileError(const std::filesystem::path& file, std::uint64_t offset,
                 const std::string& problem);

  const std::filesystem::path& file() const noexcept { return file_; }
  /// The byte offset the problem was found at, when it has one.
  std::optional<std::uint64_t> offset() const noexcept { return offset_; }

 private:
  std::filesystem::path file_;
  std::optional<std::uint64_t> offset_;
};

/// What a GGUF file (version 2 or 3, little-endian) says about its model.
struct GgufInfo {
  std::uint32_t version = 0;
  std::string architecture;           ///< general.architecture ("" when absent)
  std::string name;                   ///< general.name ("" when absent)
  std::uint64_t parameter_count = 0;  ///< sum over tensors of the product of their dims
  /// The ggml type name ("F32", "Q8_0", "Q4_K", ...) held by most tensors; on a tie, the one
  /// with the lowest ggml type id. "" when there are no tensors. Unknown ids read "TYPE_<id>".
  std::string quantization;
  std::map<std::string, std::uint64_t> tensor_types;  ///< ggml type name -> tensor count
  std::optional<std::uint64_t> file_type;             ///< general.file_type
  std::optional<std::uint64_t> context_length;        ///< <architecture>.context_length
  std::string tokenizer_model;                        ///< tokenizer.ggml.model ("" if absent)
  std::uint64_t tensor_count = 0;
  std::uint64_t metadata_count = 0;
  /// Every metadata key. Scalars as text (integers in decimal, floats in shortest round-trip
  /// form, bools "true"/"false", strings as-is); arrays as "array[<element type>;<count>]",
  /// e.g. "array[string;32000]" (element type names: uint8 int8 uint16 int16 uint32 int32
  /// float32 bool string array uint64 int64 float64).
  std::map<std::string, std::string> metadata;
  /// Bytes from offset 0 to the end of the tensor table (header + metadata + tensor infos).
  std::uint64_t header_size = 0;
  /// Lower-case hex SHA-256 of the file's first header_size bytes (tensor data excluded).
  std::string fingerprint;
};

/// Reads a GGUF file's header, metadata and tensor table, and checks that every tensor's data
/// (for known ggml types) lies inside the file. Throws ModelFileError.
GgufInfo read_gguf(const std::filesystem::path& file);

/// What a safetensors model (one file or all of its shards) says about itself.
struct SafetensorsInfo {
  std::vector<std::filesystem::path> files;  ///< the shards read, sorted by file name
  std::uint64_t parameter_count = 0;         ///< sum over tensors of the product of shapes
  std::uint64_t tensor_count = 0;
  std::map<std::string, std::uint64_t> dtypes;            ///< dtype -> tensor count
  std::map<std::string, std::uint64_t> dtype_parameters;  ///< dtype -> parameter count
  /// The union of the shards' "__metadata__" objects (string values as-is, other values as
  /// serialized JSON); where shards disagree on a key, the first shard in name order wins.
  std::map<std::string, std::string> metadata;
  /// Lower-case hex SHA-256 over, for each shard in file-name order, the bytes of its file name
  /// (no directory), one "\n", then its N JSON header bytes exactly as stored (padding
  /// included). The 8-byte length prefix and the tensor data are not hashed, so the
  /// fingerprint names the model's layout and metadata, not its weights.
  std::string fingerprint;
};

/// Reads safetensors headers. Each path is a .safetensors file or a directory, which stands for
/// all "*.safetensors" files directly in it. Files are sorted by file name (then full path).
/// Rejects: no files, a file under 8 bytes, a header length N > file size - 8 or > 100 MiB,
/// invalid JSON, a malformed tensor entry, data_offsets outside the file, or a tensor name
/// that appears twice. Throws ModelFileError.
SafetensorsInfo read_safetensors(const std::vector<std::filesystem::path>& shards);

}  // namespace dyno::record
