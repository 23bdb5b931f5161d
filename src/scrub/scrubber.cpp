// The Scrubber (scrub/scrub.h): what one record's JSON documents and free text have
// scrubbed, key by key and pattern by pattern. The policy and the run directories are in
// scrub.cpp; the text passes in scrub_text.cpp.
#include <algorithm>
#include <filesystem>
#include <functional>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "digest/digest.h"
#include "scrub/scrub.h"
#include "scrub/scrub_text.h"

namespace dyno::scrub {

namespace fs = std::filesystem;
namespace json = boost::json;

using namespace text;  // the text passes and the character classes they share

namespace {

constexpr std::string_view kHashPrefix = "sha256:";

bool host_key(const std::string& k) {
  return one_of(k, {"host", "hostname", "host_name", "node", "node_name", "nodename"});
}
bool port_key(const std::string& k) {
  return one_of(k, {"port", "ports", "host_port", "published_ports"});
}
bool container_key(const std::string& k) {
  return one_of(k, {"container", "container_name", "container_id", "containers", "labels",
                    "container_labels"});
}
bool volume_key(const std::string& k) {
  return one_of(k, {"volume", "volumes", "mounts", "binds", "bind_mounts"});
}
bool uuid_key(const std::string& k) { return one_of(k, {"uuid", "gpu_uuid", "gpu_uuids"}); }
bool prompt_hash_key(const std::string& k) {
  return one_of(k, {"prompt_sha256", "prompt_hash", "prompt_hashes"});
}
/// Generated text is the engine's output, not the harness's: only literal strings (host
/// names, UUIDs, --scrub-string) are replaced in it, no pattern.
bool content_key(const std::string& k) { return one_of(k, {"output_text", "extracted"}); }
/// A request's expected answer and regex pattern come from its stream (data, like the answer
/// they judge): treated as generated text.
bool content_field(const std::string& k, const std::string& pointer) {
  return content_key(k) || pointer == "/score/expected" || pointer == "/score/pattern";
}

std::string json_pointer_escape(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace

// ---- Scrubber --------------------------------------------------------------------------------

Scrubber::Scrubber(ScrubPolicy policy, const json::object& manifest) : policy_(std::move(policy)) {
  if (policy_.hosts) {
    const json::value* hw = manifest.if_contains("hardware");
    const json::value* host =
        hw != nullptr && hw->is_object() ? hw->get_object().if_contains("host") : nullptr;
    if (host != nullptr && host->is_string()) {
      const std::string h(host->get_string());
      if (!h.empty() && !is_marker(h) && !is_loopback(h)) {
        hostnames_.push_back(h);
        const std::string shortname = h.substr(0, h.find('.'));
        if (shortname != h && shortname.size() >= 2) hostnames_.push_back(shortname);
      }
    }
  }
  // Every UUID the manifest holds, wherever it sits (hardware.gpus, telemetry devices).
  std::function<void(const json::value&, const std::string&)> collect =
      [&](const json::value& v, const std::string& key) {
        if (const auto* o = v.if_object()) {
          for (const auto& kv : *o) collect(kv.value(), normalize_key(kv.key()));
        } else if (const auto* a = v.if_array()) {
          for (const auto& e : *a) collect(e, key);
        } else if (v.is_string() && uuid_key(key)) {
          const std::string u(v.get_string());
          if (u.size() >= 8 && !is_marker(u) && !u.starts_with(kHashPrefix) &&
              std::find(uuids_.begin(), uuids_.end(), u) == uuids_.end()) {
            uuids_.push_back(u);
          }
        }
      };
  if (policy_.gpu_uuids != UuidRule::kKeep) collect(manifest, "");
  // Longest first, so a name is never replaced inside a longer one already matched.
  const auto longer = [](const std::string& a, const std::string& b) {
    return a.size() > b.size();
  };
  std::sort(hostnames_.begin(), hostnames_.end(), longer);
  std::sort(uuids_.begin(), uuids_.end(), longer);
  std::sort(policy_.strings.begin(), policy_.strings.end(), longer);
}

std::string Scrubber::uuid_replacement(const std::string& uuid) const {
  if (policy_.gpu_uuids == UuidRule::kHash)
    return std::string(kHashPrefix) + digest::sha256_hex(uuid);
  return scrub_marker("gpu-uuid");
}

bool Scrubber::scrub_text(std::string& text) const { return scrub_text_with(text, policy_.paths); }

bool Scrubber::scrub_text_with(std::string& text, bool paths) const {
  const std::string before = text;
  scrub_secrets(text);
  TextRules rules;
  rules.hosts = policy_.hosts;
  rules.ports = policy_.ports;
  scrub_urls(text, rules);
  scrub_connect_messages(text, rules);
  if (policy_.hosts || policy_.ports) scrub_ipv4(text, rules);
  for (const auto& h : hostnames_) replace_host(text, h, rules);
  if (policy_.gpu_uuids != UuidRule::kKeep) {
    for (const auto& u : uuids_) replace_word(text, u, uuid_replacement(u), false);
    scrub_uuid_patterns(text, [this](const std::string& u) { return uuid_replacement(u); });
  }
  if (paths) scrub_paths(text);
  for (const auto& s : policy_.strings) replace_word(text, s, scrub_marker("string"), true);
  return text != before;
}

void Scrubber::scrub_json(json::value& doc, std::set<std::string>& changed) const {
  walk(doc, "", "", changed);
}

bool Scrubber::scrub_args(json::array& args, const std::string& pointer,
                          std::set<std::string>& changed) const {
  // A container launch line ("docker run …") gives -v, --name, -p their container meaning.
  bool container = false;
  for (const auto& a : args) {
    const std::string base = fs::path(std::string(a.get_string())).filename().string();
    if (one_of(base, {"docker", "podman", "nerdctl", "apptainer", "singularity"})) container = true;
  }
  const auto category = [&](const std::string& flag) -> std::string {
    if (is_secret_key(flag)) return "secret";
    if (policy_.hosts && one_of(flag, {"host", "hostname"})) return "host";
    if (policy_.ports &&
        (flag == "port" || (container && one_of(flag, {"p", "publish", "expose"}))))
      return "port";
    if (policy_.containers && container && one_of(flag, {"name", "label", "label_file"}))
      return "container";
    if (policy_.volumes && (one_of(flag, {"volume", "mount"}) || (container && flag == "v")))
      return "volume";
    return "";
  };
  bool any = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string a(args[i].get_string());
    const std::string at = pointer + "/" + std::to_string(i);
    if (a.size() > 1 && a.front() == '-' && !is_marker(a)) {
      const auto eq = a.find('=');
      const std::string flag = normalize_key(a.substr(0, eq));
      const std::string cat = category(flag);
      if (!cat.empty()) {
        if (eq != std::string::npos) {
          const std::string value = a.substr(eq + 1);
          if (!is_marker(value) && !(cat == "host" && is_loopback(value))) {
            args[i] = json::value(a.substr(0, eq + 1) + scrub_marker(cat));
            changed.insert(at);
            any = true;
          }
          continue;
        }
        if (i + 1 < args.size()) {
          const std::string value(args[i + 1].get_string());
          if (!value.empty() && value.front() != '-') {
            if (!is_marker(value) && !(cat == "host" && is_loopback(value))) {
              args[i + 1] = json::value(scrub_marker(cat));
              changed.insert(pointer + "/" + std::to_string(i + 1));
              any = true;
            }
            ++i;
            continue;
          }
        }
      }
    }
    // NAME=VALUE (an environment entry) with a secret NAME, and everything in free text.
    if (scrub_text(a)) {
      args[i] = json::value(a);
      changed.insert(at);
      any = true;
    }
  }
  return any;
}

void Scrubber::walk(json::value& v, const std::string& pointer, const std::string& key,
                    std::set<std::string>& changed) const {
  // The record's own bookkeeping: what was scrubbed, and which evidence file has which digest.
  static const std::regex kBookkeeping(R"(^/scrubbed_fields$|^/evidence/[0-9]+/(path|sha256)$)");
  if (pointer.starts_with("/scrubbed_fields") || pointer.starts_with("/evidence/")) {
    if (std::regex_match(pointer, kBookkeeping)) return;
  }
  const std::string k = normalize_key(key);
  const auto replace = [&](const std::string& with) {
    v = json::value(with);
    changed.insert(pointer);
  };
  if (!k.empty() && !v.is_null() && !v.is_bool()) {
    const bool is_str = v.is_string();
    const bool already = is_str && (is_marker(v.get_string()) ||
                                    (uuid_key(k) && v.get_string().starts_with(kHashPrefix)));
    const bool empty = (is_str && v.get_string().empty()) ||
                       (v.is_array() && v.get_array().empty()) ||
                       (v.is_object() && v.get_object().empty());
    if (!already && !empty) {
      if (is_secret_key(k) && (is_str || v.is_number())) return replace(scrub_marker("secret"));
      if (policy_.containers && container_key(k)) return replace(scrub_marker("container"));
      if (policy_.volumes && volume_key(k)) return replace(scrub_marker("volume"));
      if (policy_.hosts && host_key(k) && is_str && !is_loopback(v.get_string()))
        return replace(scrub_marker("host"));
      if (policy_.ports && port_key(k) && !v.is_object()) return replace(scrub_marker("port"));
      if (policy_.prompt_hashes &&
          (prompt_hash_key(k) || pointer == "/workload/request_stream/sha256") && is_str) {
        return replace(scrub_marker("prompt-hash"));
      }
      if (policy_.gpu_uuids != UuidRule::kKeep && uuid_key(k)) {
        if (is_str) return replace(uuid_replacement(std::string(v.get_string())));
        if (auto* a = v.if_array()) {
          for (std::size_t i = 0; i < a->size(); ++i) {
            auto& e = (*a)[i];
            if (e.is_string() && !is_marker(e.get_string()) &&
                !e.get_string().starts_with(kHashPrefix)) {
              e = json::value(uuid_replacement(std::string(e.get_string())));
              changed.insert(pointer + "/" + std::to_string(i));
            }
          }
          return;
        }
      }
    }
  }
  if (auto* o = v.if_object()) {
    for (auto& kv : *o) {
      walk(kv.value(), pointer + "/" + json_pointer_escape(kv.key()), std::string(kv.key()),
           changed);
    }
    return;
  }
  if (auto* a = v.if_array()) {
    const bool all_strings = !a->empty() && std::all_of(a->begin(), a->end(), [](const auto& e) {
      return e.is_string();
    });
    if (all_strings) {
      scrub_args(*a, pointer, changed);
      return;
    }
    for (std::size_t i = 0; i < a->size(); ++i) {
      walk((*a)[i], pointer + "/" + std::to_string(i), "", changed);
    }
    return;
  }
  if (v.is_string()) {
    std::string text(v.get_string());
    bool did = false;
    if (content_field(k, pointer)) {
      for (const auto& h : hostnames_) did |= replace_word(text, h, scrub_marker("host"), true);
      for (const auto& u : uuids_) did |= replace_word(text, u, uuid_replacement(u), false);
      for (const auto& s : policy_.strings)
        did |= replace_word(text, s, scrub_marker("string"), true);
    } else if (pointer == "/engine/reached/path") {  // a URL path, not a file path
      did = scrub_text_with(text, false);
    } else {
      did = scrub_text(text);
    }
    if (did) replace(text);
  }
}

}  // namespace dyno::scrub
