#include "sim/profile.h"

#include <boost/json.hpp>
#include <cmath>
#include <fstream>
#include <functional>
#include <sstream>
#include <string_view>
#include <utility>

#include "json/json_text.h"

namespace dyno::sim {
namespace {

namespace json = boost::json;

Profile small_gpu() {
  Profile p;
  p.name = "small-gpu";
  p.description =
      "An ~8B-class model on one fast datacenter GPU (vLLM-like): 256 running sequences, "
      "8192-token steps, 20k tok/s prefill, ~6 ms base step, 500k-token KV cache.";
  p.max_running_seqs = 256;
  p.step_token_budget = 8192;
  p.prefill_tokens_per_s = 20000.0;
  p.step_base_s = 0.006;
  p.decode_seq_s = 0.00005;
  p.decode_ctx_token_s = 2e-9;
  p.kv_capacity_tokens = 500000;
  p.max_model_len = 32768;
  p.default_max_tokens = 256;
  return p;
}

Profile large_gpu() {
  Profile p;
  p.name = "large-gpu";
  p.description =
      "A ~70B-class model on a multi-GPU node: 128 running sequences, 4096-token steps, 6k tok/s "
      "prefill, ~20 ms base step, 200k-token KV cache.";
  p.max_running_seqs = 128;
  p.step_token_budget = 4096;
  p.prefill_tokens_per_s = 6000.0;
  p.step_base_s = 0.02;
  p.decode_seq_s = 0.0002;
  p.decode_ctx_token_s = 8e-9;
  p.kv_capacity_tokens = 200000;
  p.max_model_len = 32768;
  p.default_max_tokens = 256;
  return p;
}

Profile cpu() {
  Profile p;
  p.name = "cpu";
  p.description =
      "A CPU engine (llama.cpp-like): 4 running sequences, 512-token steps, 300 tok/s prefill, "
      "~30 ms base step plus 10 ms per decoding sequence, 16k-token KV cache.";
  p.max_running_seqs = 4;
  p.step_token_budget = 512;
  p.prefill_tokens_per_s = 300.0;
  p.step_base_s = 0.03;
  p.decode_seq_s = 0.01;
  p.decode_ctx_token_s = 1e-7;
  p.kv_capacity_tokens = 16384;
  p.max_model_len = 8192;
  p.default_max_tokens = 128;
  return p;
}

Profile reasoning() {
  Profile p = small_gpu();
  p.name = "reasoning";
  p.description =
      "small-gpu serving a reasoning model: the first half of every output is streamed as "
      "reasoning_content; 512 output tokens by default.";
  p.reasoning_fraction = 0.5;
  p.default_max_tokens = 512;
  return p;
}

Profile spec() {
  Profile p = small_gpu();
  p.name = "spec";
  p.description =
      "small-gpu with speculative decoding: 3 draft tokens per step, each accepted with "
      "probability 0.7, so one event often carries several tokens.";
  p.spec_tokens = 3;
  p.spec_acceptance = 0.7;
  return p;
}

Profile firehose() {
  Profile p;
  p.name = "firehose";
  p.description =
      "No model time at all: tokens are generated as fast as the sockets take them, to measure "
      "the client's own ceiling. 4096 running sequences, unbounded KV cache.";
  p.max_running_seqs = 4096;
  p.step_token_budget = 1 << 20;
  p.prefill_tokens_per_s = 1e12;
  p.step_base_s = 0.0;
  p.decode_seq_s = 0.0;
  p.decode_ctx_token_s = 0.0;
  p.kv_capacity_tokens = std::int64_t{1} << 50;
  p.max_model_len = std::int64_t{1} << 30;
  p.default_max_tokens = 256;
  p.zero_delay = true;
  return p;
}

using Builder = Profile (*)();
constexpr std::pair<std::string_view, Builder> kBuiltins[] = {
    {"small-gpu", small_gpu}, {"large-gpu", large_gpu}, {"cpu", cpu},
    {"reasoning", reasoning}, {"spec", spec},           {"firehose", firehose},
};

std::string builtin_list() {
  std::string out;
  for (const auto& [name, build] : kBuiltins) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

// Throws ProfileError("<where>: <field> <message>") when a value is out of range.
void validate(const Profile& p, const std::string& where) {
  auto fail = [&](std::string_view field, std::string_view message) {
    throw ProfileError(where + ": " + std::string(field) + " " + std::string(message));
  };
  auto finite_nonneg = [&](std::string_view field, double v) {
    if (!std::isfinite(v) || v < 0.0) fail(field, "must be a finite number >= 0");
  };
  auto probability = [&](std::string_view field, double v) {
    if (!(v >= 0.0 && v <= 1.0)) fail(field, "must be in [0, 1]");
  };
  if (p.model_name.empty()) fail("model_name", "must not be empty");
  if (p.max_running_seqs < 1) fail("max_running_seqs", "must be >= 1");
  if (p.step_token_budget < 1) fail("step_token_budget", "must be >= 1");
  if (!std::isfinite(p.prefill_tokens_per_s) || p.prefill_tokens_per_s <= 0.0) {
    fail("prefill_tokens_per_s", "must be a finite number > 0");
  }
  finite_nonneg("step_base_s", p.step_base_s);
  finite_nonneg("decode_seq_s", p.decode_seq_s);
  finite_nonneg("decode_ctx_token_s", p.decode_ctx_token_s);
  finite_nonneg("prefill_ctx_token_s", p.prefill_ctx_token_s);
  finite_nonneg("shared_kv_token_s", p.shared_kv_token_s);
  finite_nonneg("finish_s", p.finish_s);
  if (p.kv_capacity_tokens < 1) fail("kv_capacity_tokens", "must be >= 1");
  if (p.max_model_len < 2) fail("max_model_len", "must be >= 2");
  if (p.default_max_tokens < 1) fail("default_max_tokens", "must be >= 1");
  probability("eos_probability", p.eos_probability);
  if (p.spec_tokens > 64) fail("spec_tokens", "must be <= 64");
  probability("spec_acceptance", p.spec_acceptance);
  probability("reasoning_fraction", p.reasoning_fraction);
  if (p.chat_template_tokens < 0) fail("chat_template_tokens", "must be >= 0");
  if (p.image_tokens < 0) fail("image_tokens", "must be >= 0");
  if (p.prefix_cache_block_tokens < 1) fail("prefix_cache_block_tokens", "must be >= 1");
  if (p.prefix_cache_blocks < 0) fail("prefix_cache_blocks", "must be >= 0");
}

// Field setters of the JSON profile format, keyed by field name (same names as Profile).
class FieldReader {
 public:
  FieldReader(std::string where, std::string key, const json::value& v)
      : where_(std::move(where)), key_(std::move(key)), v_(v) {}

  std::string string() const {
    if (!v_.is_string()) fail("a string");
    return std::string(v_.get_string());
  }
  double number() const {
    if (v_.is_double()) return v_.get_double();
    if (v_.is_int64()) return static_cast<double>(v_.get_int64());
    if (v_.is_uint64()) return static_cast<double>(v_.get_uint64());
    fail("a number");
  }
  std::int64_t integer() const {
    if (v_.is_int64()) return v_.get_int64();
    if (v_.is_uint64() && v_.get_uint64() <= static_cast<std::uint64_t>(INT64_MAX)) {
      return static_cast<std::int64_t>(v_.get_uint64());
    }
    fail("an integer");
  }
  std::uint32_t uint32() const {
    const std::int64_t i = integer();
    if (i < 0 || i > static_cast<std::int64_t>(UINT32_MAX)) fail("an integer in [0, 2^32)");
    return static_cast<std::uint32_t>(i);
  }
  bool boolean() const {
    if (!v_.is_bool()) fail("a boolean");
    return v_.get_bool();
  }

 private:
  [[noreturn]] void fail(std::string_view expected) const {
    throw ProfileError(where_ + ": key \"" + key_ + "\" must be " + std::string(expected));
  }
  std::string where_;
  std::string key_;
  const json::value& v_;
};

void set_field(Profile& p, const std::string& where, const std::string& key, const json::value& v) {
  const FieldReader r(where, key, v);
  if (key == "name") {
    p.name = r.string();
  } else if (key == "description") {
    p.description = r.string();
  } else if (key == "model_name") {
    p.model_name = r.string();
  } else if (key == "max_running_seqs") {
    p.max_running_seqs = r.uint32();
  } else if (key == "step_token_budget") {
    p.step_token_budget = r.integer();
  } else if (key == "prefill_tokens_per_s") {
    p.prefill_tokens_per_s = r.number();
  } else if (key == "step_base_s") {
    p.step_base_s = r.number();
  } else if (key == "decode_seq_s") {
    p.decode_seq_s = r.number();
  } else if (key == "decode_ctx_token_s") {
    p.decode_ctx_token_s = r.number();
  } else if (key == "prefill_ctx_token_s") {
    p.prefill_ctx_token_s = r.number();
  } else if (key == "shared_kv_token_s") {
    p.shared_kv_token_s = r.number();
  } else if (key == "finish_s") {
    p.finish_s = r.number();
  } else if (key == "kv_capacity_tokens") {
    p.kv_capacity_tokens = r.integer();
  } else if (key == "max_model_len") {
    p.max_model_len = r.integer();
  } else if (key == "default_max_tokens") {
    p.default_max_tokens = r.integer();
  } else if (key == "eos_probability") {
    p.eos_probability = r.number();
  } else if (key == "spec_tokens") {
    p.spec_tokens = r.uint32();
  } else if (key == "spec_acceptance") {
    p.spec_acceptance = r.number();
  } else if (key == "reasoning_fraction") {
    p.reasoning_fraction = r.number();
  } else if (key == "chat_template_tokens") {
    p.chat_template_tokens = r.integer();
  } else if (key == "image_tokens") {
    p.image_tokens = r.integer();
  } else if (key == "prefix_cache_block_tokens") {
    p.prefix_cache_block_tokens = r.integer();
  } else if (key == "prefix_cache_blocks") {
    p.prefix_cache_blocks = r.integer();
  } else if (key == "zero_delay") {
    p.zero_delay = r.boolean();
  } else {
    throw ProfileError(where + ": unknown key \"" + key + "\"");
  }
}

}  // namespace

std::vector<std::string> builtin_profile_names() {
  std::vector<std::string> names;
  for (const auto& [name, build] : kBuiltins) names.emplace_back(name);
  return names;
}

Profile builtin_profile(const std::string& name) {
  for (const auto& [builtin, build] : kBuiltins) {
    if (builtin == name) return build();
  }
  throw ProfileError("unknown profile \"" + name + "\" (built-ins: " + builtin_list() + ")");
}

Profile load_profile_file(const std::filesystem::path& path) {
  const std::string where = "profile file " + path.string();
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ProfileError(where + ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  boost::system::error_code ec;
  const json::value doc = json::parse(text.str(), ec);
  if (ec) throw ProfileError(where + ": invalid JSON: " + ec.message());
  if (!doc.is_object()) throw ProfileError(where + ": must be a JSON object");
  const json::object& obj = doc.get_object();

  Profile p;
  p.name = path.stem().string();
  if (const json::value* base = obj.if_contains("base")) {
    if (!base->is_string()) throw ProfileError(where + ": key \"base\" must be a string");
    p = about(where + ": key \"base\"",
              [&] { return builtin_profile(std::string(base->get_string())); });
    p.name = path.stem().string();
  }
  for (const auto& [key, value] : obj) {
    if (key == "base") continue;
    set_field(p, where, std::string(key), value);
  }
  validate(p, where);
  return p;
}

Profile resolve_profile(const std::string& name_or_path) {
  for (const auto& [builtin, build] : kBuiltins) {
    if (builtin == name_or_path) return build();
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(name_or_path, ec)) {
    throw ProfileError("unknown profile \"" + name_or_path + "\": neither a built-in (" +
                       builtin_list() + ") nor a file");
  }
  return load_profile_file(name_or_path);
}

std::string profile_to_json(const Profile& p) {
  json::object o;
  o["name"] = p.name;
  o["description"] = p.description;
  o["model_name"] = p.model_name;
  o["max_running_seqs"] = p.max_running_seqs;
  o["step_token_budget"] = p.step_token_budget;
  o["prefill_tokens_per_s"] = p.prefill_tokens_per_s;
  o["step_base_s"] = p.step_base_s;
  o["decode_seq_s"] = p.decode_seq_s;
  o["decode_ctx_token_s"] = p.decode_ctx_token_s;
  o["prefill_ctx_token_s"] = p.prefill_ctx_token_s;
  o["shared_kv_token_s"] = p.shared_kv_token_s;
  o["finish_s"] = p.finish_s;
  o["kv_capacity_tokens"] = p.kv_capacity_tokens;
  o["max_model_len"] = p.max_model_len;
  o["default_max_tokens"] = p.default_max_tokens;
  o["eos_probability"] = p.eos_probability;
  o["spec_tokens"] = p.spec_tokens;
  o["spec_acceptance"] = p.spec_acceptance;
  o["reasoning_fraction"] = p.reasoning_fraction;
  o["chat_template_tokens"] = p.chat_template_tokens;
  o["image_tokens"] = p.image_tokens;
  o["prefix_cache_block_tokens"] = p.prefix_cache_block_tokens;
  o["prefix_cache_blocks"] = p.prefix_cache_blocks;
  o["zero_delay"] = p.zero_delay;
  return json_text::compact(o);
}

}  // namespace dyno::sim
