#include "record/model_identity.h"

#include <algorithm>
#include <array>
#include <bit>
#include <boost/json.hpp>
#include <charconv>
#include <fstream>
#include <limits>
#include <memory>
#include <string_view>
#include <system_error>
#include <utility>

#include "digest/digest.h"

namespace dyno::record {

namespace fs = std::filesystem;

namespace {

std::string error_text(const fs::path& file, std::optional<std::uint64_t> offset,
                       const std::string& problem) {
  std::string out = "model file " + file.string() + ": " + problem;
  if (offset) out += " (at byte offset " + std::to_string(*offset) + ")";
  return out;
}

std::uint64_t regular_file_size(const fs::path& file) {
  std::error_code ec;
  const fs::file_status st = fs::status(file, ec);
  if (ec) throw ModelFileError(file, "cannot stat: " + ec.message());
  if (!fs::is_regular_file(st)) throw ModelFileError(file, "not a regular file");
  const std::uintmax_t size = fs::file_size(file, ec);
  if (ec) throw ModelFileError(file, "cannot read size: " + ec.message());
  return static_cast<std::uint64_t>(size);
}

// --- Bounded reader ---------------------------------------------------------------------

// Sequential reader over a file of known size. Every read is checked against the bytes left
// before it happens; every byte read is fed to the fingerprint.
class BoundedReader {
 public:
  explicit BoundedReader(const fs::path& file) : file_(file), size_(regular_file_size(file)) {
    in_.open(file, std::ios::binary);
    if (!in_) throw ModelFileError(file, "cannot open for reading");
  }

  std::uint64_t offset() const { return offset_; }
  std::uint64_t size() const { return size_; }
  std::uint64_t remaining() const { return size_ - offset_; }

  [[noreturn]] void fail(std::uint64_t at, const std::string& problem) const {
    throw ModelFileError(file_, at, problem);
  }

  void need(std::uint64_t n, std::string_view what) const {
    if (n > remaining()) {
      fail(offset_, "truncated: " + std::string(what) + " needs " + std::to_string(n) +
                        " bytes but only " + std::to_string(remaining()) + " remain");
    }
  }

  void read(void* dst, std::size_t n, std::string_view what) {
    need(n, what);
    if (n == 0) return;
    in_.read(static_cast<char*>(dst), static_cast<std::streamsize>(n));
    if (!in_ || static_cast<std::size_t>(in_.gcount()) != n) {
      fail(offset_, "read error in " + std::string(what));
    }
    hash_.update(std::string_view(static_cast<const char*>(dst), n));
    offset_ += n;
  }

  // Reads and hashes n bytes without keeping them (n is checked first).
  void skip(std::uint64_t n, std::string_view what) {
    need(n, what);
    std::array<char, 1 << 14> buf{};
    while (n > 0) {
      const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(n, buf.size()));
      read(buf.data(), chunk, what);
      n -= chunk;
    }
  }

  template <typename U>
  U read_uint(std::string_view what) {
    static_assert(std::is_unsigned_v<U>);
    std::array<unsigned char, sizeof(U)> b{};
    read(b.data(), b.size(), what);
    U v = 0;
    for (std::size_t i = sizeof(U); i-- > 0;) v = static_cast<U>((v << 8) | b[i]);
    return v;
  }

  // A GGUF string: uint64 length, then that many bytes (no terminator).
  std::string read_string(std::string_view what) {
    const std::uint64_t at = offset_;
    const auto len = read_uint<std::uint64_t>(what);
    if (len > remaining()) {
      fail(at, std::string(what) + " length " + std::to_string(len) + " exceeds the " +
                   std::to_string(remaining()) + " bytes left in the file");
    }
    std::string s(static_cast<std::size_t>(len), '\0');
    read(s.data(), s.size(), what);
    return s;
  }

  void skip_string(std::string_view what) {
    const std::uint64_t at = offset_;
    const auto len = read_uint<std::uint64_t>(what);
    if (len > remaining()) {
      fail(at, std::string(what) + " length " + std::to_string(len) + " exceeds the " +
                   std::to_string(remaining()) + " bytes left in the file");
    }
    skip(len, what);
  }

  std::string fingerprint() { return hash_.hex_final(); }

 private:
  fs::path file_;
  std::ifstream in_;
  std::uint64_t size_ = 0;
  std::uint64_t offset_ = 0;
  digest::Sha256 hash_;
};

// --- GGUF ----------------------------------------------------------------------------------

enum class GgufType : std::uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

constexpr std::array<const char*, 13> kGgufTypeNames = {
    "uint8", "int8",   "uint16", "int16",  "uint32", "int32",  "float32",
    "bool",  "string", "array",  "uint64", "int64",  "float64"};

constexpr std::uint32_t kMaxArrayDepth = 16;
constexpr std::uint32_t kMaxDims = 8;

// Size in bytes of a fixed-size GGUF value; 0 for string and array.
std::uint64_t fixed_size(GgufType t) {
  switch (t) {
    case GgufType::kUint8:
    case GgufType::kInt8:
    case GgufType::kBool:
      return 1;
    case GgufType::kUint16:
    case GgufType::kInt16:
      return 2;
    case GgufType::kUint32:
    case GgufType::kInt32:
    case GgufType::kFloat32:
      return 4;
    case GgufType::kUint64:
    case GgufType::kInt64:
    case GgufType::kFloat64:
      return 8;
    case GgufType::kString:
    case GgufType::kArray:
      return 0;
  }
  return 0;
}

// The fewest bytes one value of type t can take in the file.
std::uint64_t min_size(GgufType t) {
  if (t == GgufType::kString) return 8;  // length
  if (t == GgufType::kArray) return 12;  // element type + count
  return fixed_size(t);
}

GgufType read_type(BoundedReader& r, std::string_view what) {
  const std::uint64_t at = r.offset();
  const auto id = r.read_uint<std::uint32_t>(what);
  if (id >= kGgufTypeNames.size()) {
    r.fail(at, "invalid " + std::string(what) + " " + std::to_string(id) + " (valid: 0..12)");
  }
  return static_cast<GgufType>(id);
}

template <typename F>
std::string float_text(F v) {
  std::array<char, 64> buf{};
  const auto res = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  return std::string(buf.data(), res.ptr);
}

// A scalar value, as text and (for non-negative integers) as a number.
struct Scalar {
  std::string text;
  std::optional<std::uint64_t> uint;
};

Scalar read_scalar(BoundedReader& r, GgufType t, std::string_view what) {
  switch (t) {
    case GgufType::kUint8: {
      const auto v = r.read_uint<std::uint8_t>(what);
      return {std::to_string(v), v};
    }
    case GgufType::kInt8: {
      const auto v = std::bit_cast<std::int8_t>(r.read_uint<std::uint8_t>(what));
      return {std::to_string(v),
              v >= 0 ? std::optional<std::uint64_t>(static_cast<std::uint64_t>(v)) : std::nullopt};
    }
    case GgufType::kUint16: {
      const auto v = r.read_uint<std::uint16_t>(what);
      return {std::to_string(v), v};
    }
    case GgufType::kInt16: {
      const auto v = std::bit_cast<std::int16_t>(r.read_uint<std::uint16_t>(what));
      return {std::to_string(v),
              v >= 0 ? std::optional<std::uint64_t>(static_cast<std::uint64_t>(v)) : std::nullopt};
    }
    case GgufType::kUint32: {
      const auto v = r.read_uint<std::uint32_t>(what);
      return {std::to_string(v), v};
    }
    case GgufType::kInt32: {
      const auto v = std::bit_cast<std::int32_t>(r.read_uint<std::uint32_t>(what));
      return {std::to_string(v),
              v >= 0 ? std::optional<std::uint64_t>(static_cast<std::uint64_t>(v)) : std::nullopt};
    }
    case GgufType::kUint64: {
      const auto v = r.read_uint<std::uint64_t>(what);
      return {std::to_string(v), v};
    }
    case GgufType::kInt64: {
      const auto v = std::bit_cast<std::int64_t>(r.read_uint<std::uint64_t>(what));
      return {std::to_string(v),
              v >= 0 ? std::optional<std::uint64_t>(static_cast<std::uint64_t>(v)) : std::nullopt};
    }
    case GgufType::kFloat32:
      return {float_text(std::bit_cast<float>(r.read_uint<std::uint32_t>(what))), std::nullopt};
    case GgufType::kFloat64:
      return {float_text(std::bit_cast<double>(r.read_uint<std::uint64_t>(what))), std::nullopt};
    case GgufType::kBool: {
      const std::uint64_t at = r.offset();
      const auto v = r.read_uint<std::uint8_t>(what);
      if (v > 1) r.fail(at, "invalid bool value " + std::to_string(v) + " in " + std::string(what));
      return {v != 0 ? "true" : "false", std::nullopt};
    }
    case GgufType::kString:
      return {r.read_string(what), std::nullopt};
    case GgufType::kArray:
      break;
  }
  r.fail(r.offset(), "internal error: array is not a scalar");
}

// Reads (and hashes) the body of an array whose element type byte has not yet been read:
// element type, count, elements. Returns its summary "array[<type>;<count>]".
std::string read_array(BoundedReader& r, std::uint32_t depth, std::string_view key) {
  const std::string what = "array in " + std::string(key);
  if (depth > kMaxArrayDepth) {
    r.fail(r.offset(), "arrays nested deeper than " + std::to_string(kMaxArrayDepth) + " in " +
                           std::string(key));
  }
  const GgufType elem = read_type(r, "array element type of " + std::string(key));
  const std::uint64_t count_at = r.offset();
  const auto count = r.read_uint<std::uint64_t>(what);
  const std::uint64_t min_elem = min_size(elem);
  if (count > r.remaining() / min_elem) {
    r.fail(count_at, "array count " + std::to_string(count) + " of " +
                         kGgufTypeNames[static_cast<std::uint32_t>(elem)] + " in " +
                         std::string(key) + " cannot fit in the " + std::to_string(r.remaining()) +
                         " bytes left in the file");
  }
  if (const std::uint64_t fs_elem = fixed_size(elem); fs_elem > 0) {
    r.skip(count * fs_elem, what);  // count * fs_elem <= remaining: checked above
  } else if (elem == GgufType::kString) {
    for (std::uint64_t i = 0; i < count; ++i) r.skip_string("string in " + what);
  } else {
    for (std::uint64_t i = 0; i < count; ++i) read_array(r, depth + 1, key);
  }
  return "array[" + std::string(kGgufTypeNames[static_cast<std::uint32_t>(elem)]) + ";" +
         std::to_string(count) + "]";
}

struct GgmlType {
  const char* name;
  std::uint64_t block;  // elements per block; 0 = id unused/removed
  std::uint64_t bytes;  // bytes per block
};

// ggml type ids -> name, block size, block bytes (ggml.h / ggml.c type_traits).
constexpr std::array<GgmlType, 40> kGgmlTypes = {{
    {"F32", 1, 4},        {"F16", 1, 2},        {"Q4_0", 32, 18},     {"Q4_1", 32, 20},
    {"Q4_2", 0, 0},       {"Q4_3", 0, 0},       {"Q5_0", 32, 22},     {"Q5_1", 32, 24},
    {"Q8_0", 32, 34},     {"Q8_1", 32, 36},     {"Q2_K", 256, 84},    {"Q3_K", 256, 110},
    {"Q4_K", 256, 144},   {"Q5_K", 256, 176},   {"Q6_K", 256, 210},   {"Q8_K", 256, 292},
    {"IQ2_XXS", 256, 66}, {"IQ2_XS", 256, 74},  {"IQ3_XXS", 256, 98}, {"IQ1_S", 256, 50},
    {"IQ4_NL", 32, 18},   {"IQ3_S", 256, 110},  {"IQ2_S", 256, 82},   {"IQ4_XS", 256, 136},
    {"I8", 1, 1},         {"I16", 1, 2},        {"I32", 1, 4},        {"I64", 1, 8},
    {"F64", 1, 8},        {"IQ1_M", 256, 56},   {"BF16", 1, 2},       {"Q4_0_4_4", 0, 0},
    {"Q4_0_4_8", 0, 0},   {"Q4_0_8_8", 0, 0},   {"TQ1_0", 256, 54},   {"TQ2_0", 256, 66},
    {"IQ4_NL_4_4", 0, 0}, {"IQ4_NL_4_8", 0, 0}, {"IQ4_NL_8_8", 0, 0}, {"MXFP4", 32, 17},
}};

std::string ggml_type_name(std::uint32_t id) {
  if (id < kGgmlTypes.size()) return kGgmlTypes[id].name;
  return "TYPE_" + std::to_string(id);
}

bool mul_overflows(std::uint64_t a, std::uint64_t b, std::uint64_t& out) {
  return __builtin_mul_overflow(a, b, &out);
}

struct TensorInfo {
  std::uint64_t table_offset = 0;  // where its entry starts, for errors
  std::string name;
  std::vector<std::uint64_t> dims;
  std::uint32_t type = 0;
  std::uint64_t offset = 0;
  std::uint64_t elements = 0;
};

// The header: magic, version, and the tensor and metadata counts (each checked to fit).
void read_gguf_header(BoundedReader& r, GgufInfo& info) {
  std::array<char, 4> magic{};
  r.read(magic.data(), magic.size(), "magic");
  if (std::string_view(magic.data(), magic.size()) != "GGUF") {
    r.fail(0, "bad magic (not a GGUF file)");
  }
  info.version = r.read_uint<std::uint32_t>("version");
  if (info.version != 2 && info.version != 3) {
    r.fail(4, "unsupported GGUF version " + std::to_string(info.version) +
                  " (supported: 2, 3, little-endian)");
  }
  info.tensor_count = r.read_uint<std::uint64_t>("tensor count");
  info.metadata_count = r.read_uint<std::uint64_t>("metadata key/value count");
  // Each KV takes at least 8 (key length) + 4 (type) + 1 (value) bytes; each tensor entry at
  // least 8 (name length) + 4 (n_dims) + 4 (type) + 8 (offset).
  if (info.metadata_count > r.remaining() / 13) {
    r.fail(16, "metadata count " + std::to_string(info.metadata_count) + " cannot fit in the " +
                   std::to_string(r.remaining()) + " bytes left in the file");
  }
  if (info.tensor_count > r.remaining() / 24) {
    r.fail(8, "tensor count " + std::to_string(info.tensor_count) + " cannot fit in the " +
                  std::to_string(r.remaining()) + " bytes left in the file");
  }
}

// The metadata key/values, as text into info.metadata; returns the non-negative integer ones.
std::map<std::string, std::uint64_t> read_metadata(BoundedReader& r, GgufInfo& info) {
  std::map<std::string, std::uint64_t> uint_values;
  for (std::uint64_t i = 0; i < info.metadata_count; ++i) {
    const std::uint64_t kv_at = r.offset();
    std::string key = r.read_string("metadata key");
    if (info.metadata.count(key) != 0) r.fail(kv_at, "duplicate metadata key '" + key + "'");
    const GgufType type = read_type(r, "value type of '" + key + "'");
    std::string text;
    if (type == GgufType::kArray) {
      text = read_array(r, 1, key);
    } else {
      Scalar s = read_scalar(r, type, "value of '" + key + "'");
      if (s.uint) uint_values.emplace(key, *s.uint);
      text = std::move(s.text);
    }
    info.metadata.emplace(std::move(key), std::move(text));
  }
  return uint_values;
}

// The metadata keys dyno reports (architecture, name, ...); returns the tensor data alignment.
std::uint64_t read_known_keys(const BoundedReader& r, GgufInfo& info,
                              const std::map<std::string, std::uint64_t>& uint_values) {
  const auto text_of = [&](const std::string& key) {
    const auto it = info.metadata.find(key);
    return it == info.metadata.end() ? std::string() : it->second;
  };
  const auto uint_of = [&](const std::string& key) -> std::optional<std::uint64_t> {
    const auto it = uint_values.find(key);
    if (it == uint_values.end()) return std::nullopt;
    return it->second;
  };
  info.architecture = text_of("general.architecture");
  info.name = text_of("general.name");
  info.tokenizer_model = text_of("tokenizer.ggml.model");
  info.file_type = uint_of("general.file_type");
  if (!info.architecture.empty())
    info.context_length = uint_of(info.architecture + ".context_length");
  std::uint64_t alignment = 32;
  if (info.metadata.count("general.alignment") != 0) {
    const auto a = uint_of("general.alignment");
    if (!a || *a == 0 || (*a & (*a - 1)) != 0) {
      r.fail(r.offset(),
             "general.alignment '" + text_of("general.alignment") + "' is not a power of two");
    }
    alignment = *a;
  }
  return alignment;
}

// The tensor info table; sums the parameter count into info.
std::vector<TensorInfo> read_tensor_table(BoundedReader& r, GgufInfo& info) {
  std::vector<TensorInfo> tensors;
  // Reserve no more than a bounded amount: the count is only known to fit the file size.
  tensors.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(info.tensor_count, 4096)));
  for (std::uint64_t i = 0; i < info.tensor_count; ++i) {
    TensorInfo t;
    t.table_offset = r.offset();
    t.name = r.read_string("tensor name");
    const std::uint64_t dims_at = r.offset();
    const auto n_dims = r.read_uint<std::uint32_t>("n_dims of tensor '" + t.name + "'");
    if (n_dims > kMaxDims) {
      r.fail(dims_at, "tensor '" + t.name + "' has n_dims " + std::to_string(n_dims) +
                          " (at most " + std::to_string(kMaxDims) + ")");
    }
    t.elements = 1;
    for (std::uint32_t d = 0; d < n_dims; ++d) {
      const auto dim = r.read_uint<std::uint64_t>("dims of tensor '" + t.name + "'");
      t.dims.push_back(dim);
      if (mul_overflows(t.elements, dim, t.elements)) {
        r.fail(dims_at, "element count of tensor '" + t.name + "' overflows 64 bits");
      }
    }
    t.type = r.read_uint<std::uint32_t>("type of tensor '" + t.name + "'");
    t.offset = r.read_uint<std::uint64_t>("offset of tensor '" + t.name + "'");
    if (__builtin_add_overflow(info.parameter_count, t.elements, &info.parameter_count)) {
      r.fail(t.table_offset, "parameter count overflows 64 bits");
    }
    tensors.push_back(std::move(t));
  }
  return tensors;
}

// Tensor data must lie inside the file: it starts at the next multiple of the alignment.
void check_tensor_data(const BoundedReader& r, const GgufInfo& info,
                       const std::vector<TensorInfo>& tensors, std::uint64_t alignment) {
  if (tensors.empty()) return;
  const std::uint64_t data_start = (info.header_size + alignment - 1) / alignment * alignment;
  if (data_start < info.header_size || data_start > r.size()) {
    r.fail(info.header_size, "tensor data would start at " + std::to_string(data_start) +
                                 ", past the end of the file (" + std::to_string(r.size()) +
                                 " bytes)");
  }
  const std::uint64_t data_size = r.size() - data_start;
  for (const TensorInfo& t : tensors) {
    if (t.offset % alignment != 0) {
      r.fail(t.table_offset, "tensor '" + t.name + "' data offset " + std::to_string(t.offset) +
                                 " is not a multiple of " + std::to_string(alignment));
    }
    std::uint64_t nbytes = 0;
    const GgmlType* gt = t.type < kGgmlTypes.size() ? &kGgmlTypes[t.type] : nullptr;
    if (gt != nullptr && gt->block > 0) {
      const std::uint64_t ne0 = t.dims.empty() ? 1 : t.dims[0];
      if (ne0 % gt->block != 0) {
        r.fail(t.table_offset, "tensor '" + t.name + "' first dim " + std::to_string(ne0) +
                                   " is not a multiple of the " + gt->name + " block size " +
                                   std::to_string(gt->block));
      }
      if (t.elements > 0 && mul_overflows(t.elements / gt->block, gt->bytes, nbytes)) {
        r.fail(t.table_offset, "byte size of tensor '" + t.name + "' overflows 64 bits");
      }
    }
    if (t.offset > data_size || nbytes > data_size - t.offset) {
      r.fail(t.table_offset, "data of tensor '" + t.name + "' (" + std::to_string(nbytes) +
                                 " bytes at data offset " + std::to_string(t.offset) +
                                 ") runs past the end of the file (" + std::to_string(data_size) +
                                 " data bytes)");
    }
  }
}

}  // namespace

ModelFileError::ModelFileError(const fs::path& file, const std::string& problem)
    : Error(ErrorKind::input, error_text(file, std::nullopt, problem)), file_(file) {}

ModelFileError::ModelFileError(const fs::path& file, std::uint64_t offset,
                               const std::string& problem)
    : Error(ErrorKind::input, error_text(file, offset, problem)), file_(file), offset_(offset) {}

GgufInfo read_gguf(const fs::path& file) {
  BoundedReader r(file);
  GgufInfo info;
  read_gguf_header(r, info);
  const std::map<std::string, std::uint64_t> uint_values = read_metadata(r, info);
  const std::uint64_t alignment = read_known_keys(r, info, uint_values);
  const std::vector<TensorInfo> tensors = read_tensor_table(r, info);
  info.header_size = r.offset();
  info.fingerprint = r.fingerprint();
  check_tensor_data(r, info, tensors, alignment);

  std::map<std::uint32_t, std::uint64_t> by_id;
  for (const TensorInfo& t : tensors) ++by_id[t.type];
  std::uint64_t best = 0;
  for (const auto& [id, n] : by_id) {  // ascending id: ties keep the lowest id
    info.tensor_types[ggml_type_name(id)] += n;
    if (n > best) {
      best = n;
      info.quantization = ggml_type_name(id);
    }
  }
  return info;
}

// --- safetensors ---------------------------------------------------------------------------

namespace {

constexpr std::uint64_t kMaxSafetensorsHeader = 100ull * 1024 * 1024;

std::vector<fs::path> expand_shards(const std::vector<fs::path>& shards) {
  std::vector<fs::path> files;
  for (const fs::path& p : shards) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      fs::directory_iterator it(p, ec);
      if (ec) throw ModelFileError(p, "cannot list directory: " + ec.message());
      bool any = false;
      for (; it != fs::directory_iterator(); it.increment(ec)) {
        if (ec) throw ModelFileError(p, "cannot list directory: " + ec.message());
        if (it->path().extension() == ".safetensors") {
          files.push_back(it->path());
          any = true;
        }
      }
      if (ec) throw ModelFileError(p, "cannot list directory: " + ec.message());
      if (!any) throw ModelFileError(p, "directory holds no *.safetensors file");
    } else {
      files.push_back(p);
    }
  }
  std::sort(files.begin(), files.end(), [](const fs::path& a, const fs::path& b) {
    const std::string fa = a.filename().string();
    const std::string fb = b.filename().string();
    return fa != fb ? fa < fb : a < b;
  });
  files.erase(std::unique(files.begin(), files.end()), files.end());
  return files;
}

std::uint64_t json_uint(const boost::json::value& v, bool& ok) {
  if (v.is_uint64()) return v.get_uint64();
  if (v.is_int64() && v.get_int64() >= 0) return static_cast<std::uint64_t>(v.get_int64());
  ok = false;
  return 0;
}

}  // namespace

SafetensorsInfo read_safetensors(const std::vector<fs::path>& shards) {
  SafetensorsInfo info;
  info.files = expand_shards(shards);
  if (info.files.empty()) throw ModelFileError(fs::path(), "no safetensors files given");

  digest::Sha256 hash;
  std::map<std::string, fs::path> seen;  // tensor name -> file holding it
  for (const fs::path& file : info.files) {
    const std::uint64_t size = regular_file_size(file);
    std::ifstream in(file, std::ios::binary);
    if (!in) throw ModelFileError(file, "cannot open for reading");
    if (size < 8) {
      throw ModelFileError(
          file, 0,
          "truncated: " + std::to_string(size) + " bytes, shorter than the 8-byte header length");
    }
    std::array<unsigned char, 8> len_bytes{};
    in.read(reinterpret_cast<char*>(len_bytes.data()), len_bytes.size());
    if (!in) throw ModelFileError(file, 0, "read error in header length");
    std::uint64_t n = 0;
    for (std::size_t i = 8; i-- > 0;) n = (n << 8) | len_bytes[i];
    if (n > size - 8) {
      throw ModelFileError(file, 0,
                           "header length " + std::to_string(n) + " exceeds the " +
                               std::to_string(size - 8) + " bytes after it");
    }
    if (n > kMaxSafetensorsHeader) {
      throw ModelFileError(file, 0,
                           "header length " + std::to_string(n) + " exceeds the 100 MiB limit");
    }
    std::string header(static_cast<std::size_t>(n), '\0');
    in.read(header.data(), static_cast<std::streamsize>(header.size()));
    if (!in) throw ModelFileError(file, 8, "read error in JSON header");
    const std::uint64_t data_size = size - 8 - n;

    const std::string fname = file.filename().string();
    hash.update(fname);
    hash.update("\n");
    hash.update(header);

    boost::json::error_code ec;
    const boost::json::value root = boost::json::parse(header, ec);
    if (ec) throw ModelFileError(file, 8, "invalid JSON header: " + ec.message());
    if (!root.is_object()) throw ModelFileError(file, 8, "JSON header is not an object");

    for (const auto& kv : root.get_object()) {
      const std::string key(kv.key());
      if (key == "__metadata__") {
        if (!kv.value().is_object()) {
          throw ModelFileError(file, 8, "__metadata__ is not an object");
        }
        for (const auto& m : kv.value().get_object()) {
          std::string text = m.value().is_string() ? std::string(m.value().get_string())
                                                   : boost::json::serialize(m.value());
          info.metadata.emplace(std::string(m.key()), std::move(text));
        }
        continue;
      }
      const auto bad = [&](const std::string& why) {
        return ModelFileError(file, 8, "tensor '" + key + "': " + why);
      };
      if (!kv.value().is_object()) throw bad("entry is not an object");
      const boost::json::object& t = kv.value().get_object();
      const auto* dtype = t.if_contains("dtype");
      const auto* shape = t.if_contains("shape");
      const auto* offsets = t.if_contains("data_offsets");
      if (dtype == nullptr || !dtype->is_string()) throw bad("missing or non-string dtype");
      if (shape == nullptr || !shape->is_array()) throw bad("missing or non-array shape");
      if (offsets == nullptr || !offsets->is_array() || offsets->get_array().size() != 2) {
        throw bad("data_offsets is not an array of two integers");
      }
      std::uint64_t elements = 1;
      for (const auto& d : shape->get_array()) {
        bool ok = true;
        const std::uint64_t dim = json_uint(d, ok);
        if (!ok) throw bad("shape holds a value that is not a non-negative integer");
        if (mul_overflows(elements, dim, elements)) throw bad("element count overflows 64 bits");
      }
      bool ok = true;
      const std::uint64_t begin = json_uint(offsets->get_array()[0], ok);
      const std::uint64_t end = json_uint(offsets->get_array()[1], ok);
      if (!ok) throw bad("data_offsets holds a value that is not a non-negative integer");
      if (begin > end || end > data_size) {
        throw bad("data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                  "] outside the " + std::to_string(data_size) + " data bytes");
      }
      if (const auto [it, inserted] = seen.emplace(key, file); !inserted) {
        throw bad("also present in " + it->second.string());
      }
      const std::string dt(dtype->get_string());
      if (__builtin_add_overflow(info.parameter_count, elements, &info.parameter_count)) {
        throw bad("parameter count overflows 64 bits");
      }
      ++info.tensor_count;
      ++info.dtypes[dt];
      info.dtype_parameters[dt] += elements;
    }
  }
  info.fingerprint = hash.hex_final();
  return info;
}

}  // namespace dyno::record
