// Scrubbing policies (categories, policy files) and the secrets-only pass every record writer
// applies. What a document or a text has scrubbed is the Scrubber's (scrubber.cpp); run
// directories are scrubbed by record/publish.cpp.
#include "scrub/scrub.h"

#include <algorithm>
#include <boost/json/parse.hpp>
#include <random>
#include <sstream>
#include <string_view>
#include <system_error>

#include "json/json_text.h"
#include "scrub/scrub_text.h"
#include "workload/user_file.h"

namespace dyno::scrub {

namespace fs = std::filesystem;
namespace json = boost::json;

using namespace text;  // the text passes and the character classes they share

namespace {

std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(list);
  while (std::getline(in, item, ',')) {
    const auto b = item.find_first_not_of(" \t");
    const auto e = item.find_last_not_of(" \t");
    if (b != std::string::npos) out.push_back(item.substr(b, e - b + 1));
  }
  return out;
}

const char* uuid_rule_name(UuidRule r) {
  switch (r) {
    case UuidRule::kDrop:
      return "drop";
    case UuidRule::kHash:
      return "hash";
    case UuidRule::kKeep:
      return "keep";
  }
  return "drop";
}

json::object parse_json_object(const std::string& text, const std::string& name) {
  std::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) {
    throw ScrubError(name + (ec ? " is not valid JSON: " + ec.message() : " is not an object"));
  }
  return std::move(v.as_object());
}

}  // namespace

// ---- policy ----------------------------------------------------------------------------------

const std::vector<std::string>& scrub_categories() {
  static const std::vector<std::string> c{"hosts",      "ports",   "paths",
                                          "containers", "volumes", "gpu-uuids"};
  return c;
}

void keep_categories(ScrubPolicy& p, const std::string& list) {
  for (const std::string& name : split_list(list)) {
    if (name == "hosts") {
      p.hosts = false;
    } else if (name == "ports") {
      p.ports = false;
    } else if (name == "paths") {
      p.paths = false;
    } else if (name == "containers") {
      p.containers = false;
    } else if (name == "volumes") {
      p.volumes = false;
    } else if (name == "gpu-uuids") {
      p.gpu_uuids = UuidRule::kKeep;
    } else if (name == "secrets") {
      throw ScrubError("secrets are always scrubbed; they cannot be kept");
    } else {
      throw ScrubError("unknown category '" + name +
                       "'; use hosts, ports, paths, containers, volumes or gpu-uuids");
    }
  }
}

ScrubPolicy read_scrub_policy(const fs::path& file) {
  // A policy file is a user's file: regular and bounded (1 MiB is far more than any policy).
  const std::string text =
      workload::read_regular_file(file.string(), 1 << 20, [&](const workload::FileRefusal& r) {
        throw ScrubError(file.string() + " " + r.what + "; give a JSON scrubbing policy file");
      });
  const json::object o = parse_json_object(text, file.string());
  ScrubPolicy p;
  const std::string where = file.string() + ": key ";
  for (const auto& kv : o) {
    const std::string key(kv.key());
    const json::value& v = kv.value();
    if (key == "keep") {
      if (!v.is_array()) throw ScrubError(where + "'keep' must be an array of category names");
      for (const auto& e : v.get_array()) {
        if (!e.is_string()) throw ScrubError(where + "'keep' must hold strings");
        about(where + "'keep'", [&] { keep_categories(p, std::string(e.get_string())); });
      }
    } else if (key == "gpu_uuids") {
      const std::string r = v.is_string() ? std::string(v.get_string()) : "";
      if (r == "drop") {
        p.gpu_uuids = UuidRule::kDrop;
      } else if (r == "hash") {
        p.gpu_uuids = UuidRule::kHash;
      } else if (r == "keep") {
        p.gpu_uuids = UuidRule::kKeep;
      } else {
        throw ScrubError(where + "'gpu_uuids' must be \"drop\", \"hash\" or \"keep\"");
      }
    } else if (key == "prompt_hashes") {
      const std::string r = v.is_string() ? std::string(v.get_string()) : "";
      if (r != "keep" && r != "scrub") {
        throw ScrubError(where + "'prompt_hashes' must be \"keep\" or \"scrub\"");
      }
      p.prompt_hashes = r == "scrub";
    } else if (key == "strings") {
      if (!v.is_array()) throw ScrubError(where + "'strings' must be an array of strings");
      for (const auto& e : v.get_array()) {
        if (!e.is_string() || e.get_string().empty()) {
          throw ScrubError(where + "'strings' must hold non-empty strings");
        }
        p.strings.emplace_back(e.get_string());
      }
    } else {
      throw ScrubError(where + "'" + key +
                       "' is unknown; use keep, gpu_uuids, prompt_hashes or strings");
    }
  }
  return p;
}

json::object policy_to_json(const ScrubPolicy& p) {
  json::array keep;
  if (!p.hosts) keep.push_back("hosts");
  if (!p.ports) keep.push_back("ports");
  if (!p.paths) keep.push_back("paths");
  if (!p.containers) keep.push_back("containers");
  if (!p.volumes) keep.push_back("volumes");
  json::array strings;
  for (const auto& s : p.strings) strings.push_back(json::value(s));
  return json::object{{"keep", std::move(keep)},
                      {"gpu_uuids", uuid_rule_name(p.gpu_uuids)},
                      {"prompt_hashes", p.prompt_hashes ? "scrub" : "keep"},
                      {"strings", std::move(strings)}};
}

std::vector<std::string> redact_secrets(json::value& doc) {
  ScrubPolicy secrets_only;
  secrets_only.hosts = secrets_only.ports = secrets_only.paths = false;
  secrets_only.containers = secrets_only.volumes = false;
  secrets_only.gpu_uuids = UuidRule::kKeep;
  std::set<std::string> changed;
  Scrubber(secrets_only, json::object()).scrub_json(doc, changed);
  return {changed.begin(), changed.end()};
}

}  // namespace dyno::scrub
