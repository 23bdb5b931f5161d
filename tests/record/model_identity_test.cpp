#include "record/model_identity.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <array>
#include <bit>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "temp_dir.h"

namespace fs = std::filesystem;
using dyno::record::GgufInfo;
using dyno::record::ModelFileError;
using dyno::record::read_gguf;
using dyno::record::read_safetensors;
using dyno::record::SafetensorsInfo;

namespace {

std::string sha256_hex(std::string_view bytes) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned len = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest.data(), &len, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 0xfu]);
  }
  return out;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_all(const fs::path& p, std::string_view bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << p;
}

// Little-endian byte builder for hand-made GGUF files.
struct Bytes {
  std::string s;
  template <typename U>
  Bytes& le(U v) {
    for (std::size_t i = 0; i < sizeof(U); ++i) {
      s.push_back(static_cast<char>(static_cast<unsigned char>((v >> (8 * i)) & 0xffu)));
    }
    return *this;
  }
  Bytes& u8(std::uint8_t v) { return le(v); }
  Bytes& u16(std::uint16_t v) { return le(v); }
  Bytes& u32(std::uint32_t v) { return le(v); }
  Bytes& u64(std::uint64_t v) { return le(v); }
  Bytes& str(std::string_view v) {
    u64(v.size());
    s.append(v);
    return *this;
  }
  Bytes& raw(std::string_view v) {
    s.append(v);
    return *this;
  }
  // A key followed by its value type id.
  Bytes& kv(std::string_view key, std::uint32_t type) {
    str(key);
    return u32(type);
  }
};

enum : std::uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kStr = 8,
  kArr = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};

constexpr std::size_t kMetadataCount = 22;

// A small valid GGUF v3: every metadata type, nested arrays, two tensors with their data.
// Sets *header_size to the end of the tensor table.
std::string small_gguf(std::size_t* header_size = nullptr) {
  Bytes b;
  b.raw("GGUF").u32(3).u64(2).u64(kMetadataCount);
  b.kv("general.architecture", kStr).str("tiny");
  b.kv("general.name", kStr).str("Tiny Test");
  b.kv("general.file_type", kU32).u32(7);
  b.kv("general.alignment", kU32).u32(32);
  b.kv("tiny.context_length", kU64).u64(4096);
  b.kv("tokenizer.ggml.model", kStr).str("gpt2");
  b.kv("t.u8", kU8).u8(200);
  b.kv("t.i8", kI8).u8(static_cast<std::uint8_t>(-5));
  b.kv("t.u16", kU16).u16(60000);
  b.kv("t.i16", kI16).u16(static_cast<std::uint16_t>(-300));
  b.kv("t.u32", kU32).u32(4000000000u);
  b.kv("t.i32", kI32).u32(static_cast<std::uint32_t>(-70000));
  b.kv("t.f32", kF32).u32(std::bit_cast<std::uint32_t>(1.5f));
  b.kv("t.bool", kBool).u8(1);
  b.kv("t.u64", kU64).u64(18446744073709551615ull);
  b.kv("t.i64", kI64).u64(static_cast<std::uint64_t>(-9000000000ll));
  b.kv("t.f64", kF64).u64(std::bit_cast<std::uint64_t>(0.1));
  b.kv("t.arr_str", kArr).u32(kStr).u64(3).str("a").str("").str("ccc");
  b.kv("t.arr_f32", kArr).u32(kF32).u64(2).u32(0).u32(0);
  // array of 2 arrays of int32: [[1,2],[3]]
  b.kv("t.arr_arr", kArr).u32(kArr).u64(2);
  b.u32(kI32).u64(2).u32(1).u32(2);
  b.u32(kI32).u64(1).u32(3);
  // array of 1 array of 2 arrays of strings: [[["x"],[]]]
  b.kv("t.arr3", kArr).u32(kArr).u64(1);
  b.u32(kArr).u64(2);
  b.u32(kStr).u64(1).str("x");
  b.u32(kStr).u64(0);
  b.kv("t.arr_empty", kArr).u32(kBool).u64(0);
  // Tensor table: "a" F32 [4,2] at 0 (32 bytes); "b" Q8_0 [32] at 32 (34 bytes).
  b.str("a").u32(2).u64(4).u64(2).u32(0).u64(0);
  b.str("b").u32(1).u64(32).u32(8).u64(32);
  if (header_size != nullptr) *header_size = b.s.size();
  while (b.s.size() % 32 != 0) b.s.push_back('\0');
  for (int i = 0; i < 66; ++i) b.s.push_back(static_cast<char>(i));
  return b.s;
}

class ModelIdentityTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = dyno::testing::make_temp_dir("dyno-model-identity"); }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& name, std::string_view bytes) {
    const fs::path p = dir_ / name;
    write_all(p, bytes);
    return p;
  }

  // The ModelFileError message read_gguf gives for these bytes ("" when it does not throw).
  std::string gguf_error(std::string_view bytes) {
    const fs::path p = write("x.gguf", bytes);
    try {
      read_gguf(p);
    } catch (const ModelFileError& e) {
      EXPECT_EQ(e.file(), p);
      EXPECT_NE(std::string(e.what()).find(p.string()), std::string::npos) << e.what();
      return e.what();
    }
    return "";
  }

  fs::path dir_;
};

// --- Real fixture ---------------------------------------------------------------------------

TEST_F(ModelIdentityTest, Stories260K) {
  const fs::path path = fs::path(DYNO_SHARED_FIXTURES) / "stories260K.gguf";
  if (!fs::exists(path)) GTEST_SKIP() << "fixture absent: " << path;
  const GgufInfo info = read_gguf(path);
  EXPECT_EQ(info.version, 3u);
  EXPECT_EQ(info.architecture, "llama");
  EXPECT_EQ(info.tokenizer_model, "llama");
  EXPECT_EQ(info.name, "llama");
  EXPECT_EQ(info.parameter_count, 292800u);
  EXPECT_EQ(info.metadata_count, 19u);
  EXPECT_FALSE(info.file_type.has_value());
  EXPECT_EQ(info.tensor_count, 48u);
  EXPECT_EQ(info.quantization, "F32");
  ASSERT_TRUE(info.context_length.has_value());
  EXPECT_EQ(*info.context_length, 2048u);
  EXPECT_EQ(info.metadata.at("llama.block_count"), "5");
  EXPECT_EQ(info.metadata.at("llama.attention.layer_norm_rms_epsilon"), "1e-05");
  EXPECT_EQ(info.metadata.at("tokenizer.ggml.tokens"), "array[string;512]");
  EXPECT_EQ(info.header_size, 14152u);
  EXPECT_EQ(info.fingerprint, "6d1305921b546d1384a3a7de9a511136fca0c8a25e2f7ed477531694a66b3f2b");
  const std::string bytes = read_all(path);
  ASSERT_LE(info.header_size, bytes.size());
  EXPECT_EQ(info.fingerprint, sha256_hex(std::string_view(bytes).substr(0, info.header_size)));
  EXPECT_EQ(read_gguf(path).fingerprint, info.fingerprint);
}

// --- Hand-made GGUF ---------------------------------------------------------------------------

TEST_F(ModelIdentityTest, GgufEveryMetadataType) {
  std::size_t header_size = 0;
  const std::string bytes = small_gguf(&header_size);
  const GgufInfo info = read_gguf(write("small.gguf", bytes));
  EXPECT_EQ(info.version, 3u);
  EXPECT_EQ(info.architecture, "tiny");
  EXPECT_EQ(info.name, "Tiny Test");
  EXPECT_EQ(info.file_type, 7u);
  EXPECT_EQ(info.context_length, 4096u);
  EXPECT_EQ(info.tokenizer_model, "gpt2");
  EXPECT_EQ(info.tensor_count, 2u);
  EXPECT_EQ(info.metadata_count, kMetadataCount);
  EXPECT_EQ(info.metadata.size(), kMetadataCount);
  EXPECT_EQ(info.parameter_count, 4u * 2u + 32u);
  EXPECT_EQ(info.tensor_types.at("F32"), 1u);
  EXPECT_EQ(info.tensor_types.at("Q8_0"), 1u);
  EXPECT_EQ(info.quantization, "F32");  // tie: lowest ggml type id
  const auto& m = info.metadata;
  EXPECT_EQ(m.at("t.u8"), "200");
  EXPECT_EQ(m.at("t.i8"), "-5");
  EXPECT_EQ(m.at("t.u16"), "60000");
  EXPECT_EQ(m.at("t.i16"), "-300");
  EXPECT_EQ(m.at("t.u32"), "4000000000");
  EXPECT_EQ(m.at("t.i32"), "-70000");
  EXPECT_EQ(m.at("t.f32"), "1.5");
  EXPECT_EQ(m.at("t.bool"), "true");
  EXPECT_EQ(m.at("t.u64"), "18446744073709551615");
  EXPECT_EQ(m.at("t.i64"), "-9000000000");
  EXPECT_EQ(m.at("t.f64"), "0.1");
  EXPECT_EQ(m.at("t.arr_str"), "array[string;3]");
  EXPECT_EQ(m.at("t.arr_f32"), "array[float32;2]");
  EXPECT_EQ(m.at("t.arr_arr"), "array[array;2]");
  EXPECT_EQ(m.at("t.arr3"), "array[array;1]");
  EXPECT_EQ(m.at("t.arr_empty"), "array[bool;0]");
  EXPECT_EQ(m.at("general.alignment"), "32");
  EXPECT_EQ(info.header_size, header_size);
  EXPECT_EQ(info.fingerprint, sha256_hex(std::string_view(bytes).substr(0, header_size)));

  // Tensor data is not part of the fingerprint; the header is.
  std::string data_changed = bytes;
  data_changed.back() = '\x7f';
  EXPECT_EQ(read_gguf(write("d.gguf", data_changed)).fingerprint, info.fingerprint);
  std::string header_changed = bytes;
  header_changed[header_changed.find("Tiny Test")] = 'X';
  EXPECT_NE(read_gguf(write("h.gguf", header_changed)).fingerprint, info.fingerprint);

  // Version 2 has the same layout.
  std::string v2 = bytes;
  v2[4] = 2;
  EXPECT_EQ(read_gguf(write("v2.gguf", v2)).version, 2u);
}

TEST_F(ModelIdentityTest, GgufTruncatedAtEveryOffset) {
  const std::string bytes = small_gguf();
  for (std::size_t k = 0; k < bytes.size(); ++k) {
    const std::string msg = gguf_error(std::string_view(bytes).substr(0, k));
    EXPECT_FALSE(msg.empty()) << "no error when truncated to " << k << " bytes";
  }
  EXPECT_TRUE(gguf_error(bytes).empty());
}

TEST_F(ModelIdentityTest, GgufRandomCorruptionNeverCrashes) {
  const std::string bytes = small_gguf();
  std::mt19937_64 rng(12345);
  std::uniform_int_distribution<std::size_t> pos(0, bytes.size() - 1);
  std::uniform_int_distribution<int> byte(0, 255);
  const fs::path p = dir_ / "fuzz.gguf";
  for (int i = 0; i < 3000; ++i) {
    std::string mutated = bytes;
    for (int j = 0; j < 1 + i % 4; ++j) mutated[pos(rng)] = static_cast<char>(byte(rng));
    write_all(p, mutated);
    try {
      read_gguf(p);  // may still be valid
    } catch (const ModelFileError&) {
    }
  }
}

TEST_F(ModelIdentityTest, GgufHugeStringLength) {
  Bytes b;
  b.raw("GGUF").u32(3).u64(0).u64(1).u64(1ull << 60).raw("general.name");
  const std::string msg = gguf_error(b.s);
  EXPECT_NE(msg.find("length 1152921504606846976 exceeds"), std::string::npos) << msg;
  EXPECT_NE(msg.find("byte offset 24"), std::string::npos) << msg;

  Bytes v;
  v.raw("GGUF").u32(3).u64(0).u64(1).kv("general.name", kStr).u64(1ull << 60).raw("abc");
  const std::string msg2 = gguf_error(v.s);
  EXPECT_NE(msg2.find("value of 'general.name' length 1152921504606846976"), std::string::npos)
      << msg2;
  EXPECT_NE(msg2.find("byte offset 48"), std::string::npos) << msg2;
}

TEST_F(ModelIdentityTest, GgufBadMagicAndVersion) {
  std::string bytes = small_gguf();
  std::string bad_magic = bytes;
  bad_magic[0] = 'X';
  EXPECT_NE(gguf_error(bad_magic).find("bad magic"), std::string::npos);
  std::string v1 = bytes;
  v1[4] = 1;
  const std::string msg = gguf_error(v1);
  EXPECT_NE(msg.find("unsupported GGUF version 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("byte offset 4"), std::string::npos) << msg;
  std::string big_endian = bytes;
  big_endian[4] = 0;
  big_endian[7] = 3;
  EXPECT_NE(gguf_error(big_endian).find("unsupported GGUF version 50331648"), std::string::npos);
  EXPECT_NE(gguf_error("").find("truncated"), std::string::npos);
}

TEST_F(ModelIdentityTest, GgufLyingCounts) {
  {  // metadata count far beyond the file
    Bytes b;
    b.raw("GGUF").u32(3).u64(0).u64(1ull << 62);
    EXPECT_NE(gguf_error(b.s).find("metadata count"), std::string::npos);
  }
  {  // tensor count far beyond the file
    Bytes b;
    b.raw("GGUF").u32(3).u64(~0ull).u64(0);
    EXPECT_NE(gguf_error(b.s).find("tensor count"), std::string::npos);
  }
  {  // array count beyond the file
    Bytes b;
    b.raw("GGUF").u32(3).u64(0).u64(1).kv("k", kArr).u32(kU64).u64(1ull << 40).u64(1);
    const std::string msg = gguf_error(b.s);
    EXPECT_NE(msg.find("array count 1099511627776 of uint64 in k cannot fit"), std::string::npos)
        << msg;
  }
  {  // array of strings whose count fits in bytes but not as strings
    Bytes b;
    b.raw("GGUF").u32(3).u64(0).u64(1).kv("k", kArr).u32(kStr).u64(3).u64(0).u64(0);
    EXPECT_NE(gguf_error(b.s).find("array count 3 of string"), std::string::npos);
  }
  {  // invalid value type
    Bytes b;
    b.raw("GGUF").u32(3).u64(0).u64(1).kv("k", 13).u64(0);
    EXPECT_NE(gguf_error(b.s).find("invalid value type of 'k' 13"), std::string::npos);
  }
  {  // arrays nested without end
    Bytes b;
    b.raw("GGUF").u32(3).u64(0).u64(1).kv("k", kArr);
    for (int i = 0; i < 40; ++i) b.u32(kArr).u64(1);
    EXPECT_NE(gguf_error(b.s).find("nested deeper"), std::string::npos);
  }
  {  // n_dims > 8
    Bytes b;
    b.raw("GGUF").u32(3).u64(1).u64(0).str("t").u32(9);
    for (int i = 0; i < 9; ++i) b.u64(1);
    b.u32(0).u64(0);
    const std::string msg = gguf_error(b.s);
    EXPECT_NE(msg.find("tensor 't' has n_dims 9"), std::string::npos) << msg;
    EXPECT_NE(msg.find("byte offset 33"), std::string::npos) << msg;
  }
  {  // element count overflow
    Bytes b;
    b.raw("GGUF").u32(3).u64(1).u64(0).str("t").u32(2).u64(1ull << 40).u64(1ull << 40);
    b.u32(0).u64(0);
    EXPECT_NE(gguf_error(b.s).find("overflows"), std::string::npos);
  }
  {  // tensor data past the end of the file
    Bytes b;
    b.raw("GGUF").u32(3).u64(1).u64(0).str("t").u32(1).u64(1000).u32(0).u64(0);
    while (b.s.size() % 32 != 0) b.s.push_back('\0');
    b.raw("0123");
    EXPECT_NE(gguf_error(b.s).find("runs past the end"), std::string::npos);
  }
  {  // duplicate key
    Bytes b;
    b.raw("GGUF").u32(3).u64(0).u64(2).kv("k", kU8).u8(1).kv("k", kU8).u8(2);
    EXPECT_NE(gguf_error(b.s).find("duplicate metadata key 'k'"), std::string::npos);
  }
}

// --- safetensors ------------------------------------------------------------------------------

std::string safetensors(std::string_view header, std::string_view data) {
  Bytes b;
  b.u64(header.size()).raw(header).raw(data);
  return b.s;
}

const std::string kHeader1 =
    R"({"__metadata__":{"format":"pt"},"w":{"dtype":"F16","shape":[2,3],"data_offsets":[0,12]},)"
    R"("b":{"dtype":"F32","shape":[3],"data_offsets":[12,24]}})";
const std::string kHeader2 = R"({"e":{"dtype":"F16","shape":[4,1,2],"data_offsets":[0,16]}}   )";

TEST_F(ModelIdentityTest, SafetensorsSingleFile) {
  const fs::path p = write("model.safetensors", safetensors(kHeader1, std::string(24, 'a')));
  const SafetensorsInfo info = read_safetensors({p});
  ASSERT_EQ(info.files.size(), 1u);
  EXPECT_EQ(info.parameter_count, 9u);
  EXPECT_EQ(info.tensor_count, 2u);
  EXPECT_EQ(info.dtypes.at("F16"), 1u);
  EXPECT_EQ(info.dtypes.at("F32"), 1u);
  EXPECT_EQ(info.dtype_parameters.at("F16"), 6u);
  EXPECT_EQ(info.metadata.at("format"), "pt");
  EXPECT_EQ(info.fingerprint, sha256_hex("model.safetensors\n" + kHeader1));
}

TEST_F(ModelIdentityTest, SafetensorsShards) {
  const fs::path s1 =
      write("model-00001-of-00002.safetensors", safetensors(kHeader1, std::string(24, 'a')));
  const fs::path s2 =
      write("model-00002-of-00002.safetensors", safetensors(kHeader2, std::string(16, 'b')));
  write("config.json", "{}");
  const SafetensorsInfo info = read_safetensors({s2, s1});  // any order in, name order used
  ASSERT_EQ(info.files.size(), 2u);
  EXPECT_EQ(info.files[0], s1);
  EXPECT_EQ(info.parameter_count, 17u);
  EXPECT_EQ(info.tensor_count, 3u);
  EXPECT_EQ(info.dtypes.at("F16"), 2u);
  EXPECT_EQ(info.fingerprint, sha256_hex("model-00001-of-00002.safetensors\n" + kHeader1 +
                                         "model-00002-of-00002.safetensors\n" + kHeader2));
  const SafetensorsInfo from_dir = read_safetensors({dir_});
  EXPECT_EQ(from_dir.files, info.files);
  EXPECT_EQ(from_dir.fingerprint, info.fingerprint);

  // Depends on both headers, not on the data.
  const SafetensorsInfo only_first = read_safetensors({s1});
  EXPECT_NE(only_first.fingerprint, info.fingerprint);
  write("model-00002-of-00002.safetensors", safetensors(kHeader2, std::string(16, 'c')));
  EXPECT_EQ(read_safetensors({dir_}).fingerprint, info.fingerprint);
  std::string h2 = kHeader2;
  h2[h2.find("[4,1,2]") + 3] = '3';
  write("model-00002-of-00002.safetensors", safetensors(h2, std::string(16, 'c')));
  const SafetensorsInfo changed = read_safetensors({dir_});
  EXPECT_NE(changed.fingerprint, info.fingerprint);
  EXPECT_EQ(changed.parameter_count, 6u + 3u + 24u);  // [4,3,2]

  // The same tensor in two shards.
  write("model-00002-of-00002.safetensors", safetensors(kHeader1, std::string(24, 'c')));
  EXPECT_THROW(read_safetensors({dir_}), ModelFileError);
}

std::string safetensors_error(const fs::path& p) {
  try {
    read_safetensors({p});
  } catch (const ModelFileError& e) {
    EXPECT_NE(std::string(e.what()).find(p.filename().string()), std::string::npos) << e.what();
    return e.what();
  }
  return "";
}

TEST_F(ModelIdentityTest, SafetensorsErrors) {
  {  // N lying: larger than the file
    Bytes b;
    b.u64(1ull << 60).raw("{}");
    const std::string msg = safetensors_error(write("a.safetensors", b.s));
    EXPECT_NE(msg.find("header length 1152921504606846976 exceeds the 2 bytes"), std::string::npos)
        << msg;
  }
  {  // N over 100 MiB in a (sparse) file large enough to hold it
    Bytes b;
    b.u64(101ull << 20);
    const fs::path p = write("big.safetensors", b.s);
    fs::resize_file(p, (101ull << 20) + 8);
    const std::string msg = safetensors_error(p);
    EXPECT_NE(msg.find("100 MiB"), std::string::npos) << msg;
  }
  EXPECT_NE(safetensors_error(write("c.safetensors", "abc")).find("truncated"), std::string::npos);
  EXPECT_NE(
      safetensors_error(write("d.safetensors", safetensors("{\"w\":", ""))).find("invalid JSON"),
      std::string::npos);
  EXPECT_NE(safetensors_error(write("e.safetensors", safetensors("[1]", ""))).find("not an object"),
            std::string::npos);
  EXPECT_NE(
      safetensors_error(
          write("f.safetensors", safetensors(R"({"w":{"shape":[1],"data_offsets":[0,2]}})", "xx")))
          .find("tensor 'w': missing or non-string dtype"),
      std::string::npos);
  EXPECT_NE(
      safetensors_error(write("g.safetensors", safetensors(R"({"w":{"dtype":"F16","shape":[-1],)"
                                                           R"("data_offsets":[0,2]}})",
                                                           "xx")))
          .find("non-negative integer"),
      std::string::npos);
  EXPECT_NE(
      safetensors_error(write("h.safetensors", safetensors(R"({"w":{"dtype":"F16","shape":[4],)"
                                                           R"("data_offsets":[0,8]}})",
                                                           "xx")))
          .find("outside the 2 data bytes"),
      std::string::npos);
  const fs::path empty = dir_ / "empty";
  fs::create_directories(empty);
  EXPECT_THROW(read_safetensors({empty}), ModelFileError);
  EXPECT_THROW(read_safetensors({}), ModelFileError);
  EXPECT_THROW(read_safetensors({dir_ / "missing.safetensors"}), ModelFileError);
}

}  // namespace
