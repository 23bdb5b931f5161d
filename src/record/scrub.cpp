// Scrubbing policies (categories, policy files) and run directories (scrubbed in place or
// published as a scrubbed copy). What a record's documents and text have scrubbed is the
// Scrubber's (scrubber.cpp).
#include "record/scrub.h"

#include <algorithm>
#include <boost/json/parse.hpp>
#include <random>
#include <sstream>
#include <string_view>
#include <system_error>

#include "json/json_text.h"
#include "record/record_json.h"
#include "record/run_verify.h"
#include "record/run_writer.h"
#include "record/scrub_text.h"

namespace dyno::record {

namespace fs = std::filesystem;
namespace json = boost::json;

using namespace scrub_text;  // the text passes and the character classes they share

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

std::string scrub_marker(const std::string& category) {
  return std::string(kMarkerPrefix) + category + ">";
}

bool is_secret_key(std::string_view key) {
  const std::string k = normalize_key(key);
  if (one_of(k, {"api_key",
                 "apikey",
                 "x_api_key",
                 "authorization",
                 "proxy_authorization",
                 "cookie",
                 "set_cookie",
                 "token",
                 "access_token",
                 "auth_token",
                 "refresh_token",
                 "id_token",
                 "bearer_token",
                 "hf_token",
                 "hf_hub_token",
                 "hugging_face_hub_token",
                 "huggingface_token",
                 "github_token",
                 "gh_token",
                 "password",
                 "passwd",
                 "secret",
                 "client_secret",
                 "private_key",
                 "credentials"})) {
    return true;
  }
  for (std::string_view suffix : {"_api_key", "_secret", "_password", "_access_token",
                                  "_auth_token", "_secret_key", "_private_key"}) {
    if (k.size() > suffix.size() && k.ends_with(suffix)) return true;
  }
  // Any word (split at '_' and '.') that says secret: AWS_SECRET_ACCESS_KEY,
  // --basic-auth-password. Not "token": records are full of token counts and times
  // (first_token_ns, token_count_source); secret tokens are named above.
  std::size_t start = 0;
  while (start <= k.size()) {
    std::size_t end = k.find_first_of("_.", start);
    if (end == std::string::npos) end = k.size();
    if (one_of(std::string_view(k).substr(start, end - start),
               {"secret", "password", "passwd", "credential", "credentials", "apikey",
                "authorization", "cookie"})) {
      return true;
    }
    start = end + 1;
  }
  return false;
}

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
  std::string text;
  try {
    text = read_file(file);
  } catch (const RecordError& e) {
    throw ScrubError(e.what());
  }
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
        try {
          keep_categories(p, std::string(e.get_string()));
        } catch (const ScrubError& err) {
          throw ScrubError(where + "'keep': " + err.what());
        }
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

// ---- run directories -------------------------------------------------------------------------

namespace {

struct Rewrite {
  std::string rel;
  std::string text;
};

/// The record's files but SHA256SUMS and manifest.json, relative to `dir`, sorted.
std::vector<std::string> files_to_scrub(const fs::path& dir) {
  std::vector<std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    const std::string rel = fs::relative(entry.path(), dir).generic_string();
    if (rel == "SHA256SUMS" || rel == "manifest.json") continue;
    files.push_back(rel);
  }
  std::sort(files.begin(), files.end());
  return files;
}

/// A JSON Lines file, line by line; a line that is not JSON is scrubbed as text.
bool scrub_jsonl(const Scrubber& scrubber, const std::string& rel, const std::string& text,
                 std::string& result, std::set<std::string>& changed) {
  bool did = false;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::error_code ec;
    json::value v = line.empty() ? json::value() : json::parse(line, ec);
    if (line.empty() || ec) {  // not JSON: scrub it as text
      std::string copy = line;
      if (scrubber.scrub_text(copy)) {
        changed.insert(rel);
        did = true;
      }
      result += copy + "\n";
      continue;
    }
    std::set<std::string> pointers;
    scrubber.scrub_json(v, pointers);
    if (pointers.empty()) {
      result += line + "\n";
    } else {
      did = true;
      for (const auto& p : pointers) changed.insert(rel + "#" + p);
      result += json_text::compact(v) + "\n";
    }
  }
  if (!text.empty() && text.back() != '\n' && !result.empty()) result.pop_back();
  return did;
}

/// One file's text scrubbed by its kind (.jsonl, .json, else text) into `result`; true when
/// anything changed (each change noted in `changed`).
bool scrub_file(const Scrubber& scrubber, const std::string& rel, const std::string& text,
                std::string& result, std::set<std::string>& changed) {
  const std::string ext = fs::path(rel).extension().string();
  bool did = false;
  if (ext == ".jsonl") {
    did = scrub_jsonl(scrubber, rel, text, result, changed);
  } else if (ext == ".json") {
    std::error_code ec;
    json::value v = json::parse(text, ec);
    if (!ec) {
      std::set<std::string> pointers;
      scrubber.scrub_json(v, pointers);
      did = !pointers.empty();
      for (const auto& p : pointers) changed.insert(rel + "#" + p);
      if (did) result = pretty_json(v);
    } else {
      result = text;
      did = scrubber.scrub_text(result);
      if (did) changed.insert(rel);
    }
  } else {
    result = text;
    did = scrubber.scrub_text(result);
    if (did) changed.insert(rel);
  }
  return did;
}

/// The scrubbed manifest's bookkeeping: evidence digests and the scrubbed fields' list.
void update_manifest(json::object& m, const std::set<std::string>& changed,
                     const std::vector<Rewrite>& rewrites) {
  // Evidence digests follow the scrubbed files.
  if (auto* ev = m.if_contains("evidence"); ev != nullptr && ev->is_array()) {
    for (auto& e : ev->get_array()) {
      auto* o = e.if_object();
      if (o == nullptr || !o->contains("path") || !o->at("path").is_string()) continue;
      const std::string path(o->at("path").get_string());
      for (const auto& r : rewrites) {
        if (r.rel == path) (*o)["sha256"] = sha256_hex(r.text);
      }
    }
  }
  std::set<std::string> all(changed.begin(), changed.end());
  if (const auto* old = m.if_contains("scrubbed_fields"); old != nullptr && old->is_array()) {
    for (const auto& e : old->get_array()) {
      if (e.is_string()) all.insert(std::string(e.get_string()));
    }
  }
  json::array list;
  for (const auto& c : all) list.push_back(json::value(c));
  m["scrubbed_fields"] = std::move(list);
}

ScrubOutcome scrub_dir(const fs::path& dir, const ScrubPolicy& policy, bool dry_run) {
  ScrubOutcome out;
  json::object manifest;
  try {
    manifest = parse_json_object(read_file(dir / "manifest.json"), "manifest.json");
  } catch (const RecordError& e) {
    throw ScrubError(e.what());
  }
  const Scrubber scrubber(policy, manifest);
  std::set<std::string> changed;
  std::vector<Rewrite> rewrites;

  for (const std::string& rel : files_to_scrub(dir)) {
    std::string text;
    try {
      text = read_file(dir / rel);
    } catch (const RecordError& e) {
      throw ScrubError(e.what());
    }
    if (text.find('\0') != std::string::npos) {
      out.files_skipped.push_back(rel);
      continue;
    }
    std::string result;
    if (scrub_file(scrubber, rel, text, result, changed)) {
      rewrites.push_back({rel, std::move(result)});
    }
  }

  json::value mv = manifest;
  std::set<std::string> pointers;
  scrubber.scrub_json(mv, pointers);
  for (const auto& p : pointers) changed.insert("manifest.json#" + p);
  out.changed.assign(changed.begin(), changed.end());
  if (changed.empty()) return out;

  update_manifest(mv.as_object(), changed, rewrites);
  rewrites.push_back({"manifest.json", pretty_json(mv)});

  for (const auto& r : rewrites) out.files_rewritten.push_back(r.rel);
  if (dry_run) return out;
  try {
    for (const auto& r : rewrites) write_file_atomic(dir / r.rel, r.text);
    write_sha256sums(dir);
  } catch (const RecordError& e) {
    throw ScrubError(std::string(e.what()) + " (the record is half scrubbed: scrub it again)");
  }
  return out;
}

void require_verified(const fs::path& dir) {
  const VerifyReport report = verify_run_dir(dir, /*schema=*/false);  // integrity
  if (report.ok()) return;
  const VerifyProblem& p = report.problems.front();
  throw ScrubError("run " + dir.filename().string() + " does not verify (" +
                   (p.path.empty() ? "" : p.path + ": ") + p.message +
                   (report.problems.size() > 1
                        ? "; and " + std::to_string(report.problems.size() - 1) + " more"
                        : "") +
                   "); a scrubbed copy would re-sign it, so it is left alone. "
                   "`dyno runs verify` lists every problem");
}

}  // namespace

std::vector<std::string> redact_secrets(json::value& doc) {
  ScrubPolicy secrets_only;
  secrets_only.hosts = secrets_only.ports = secrets_only.paths = false;
  secrets_only.containers = secrets_only.volumes = false;
  secrets_only.gpu_uuids = UuidRule::kKeep;
  std::set<std::string> changed;
  Scrubber(secrets_only, json::object()).scrub_json(doc, changed);
  return {changed.begin(), changed.end()};
}

ScrubOutcome scrub_run_dir(const fs::path& dir, const ScrubPolicy& policy, bool dry_run) {
  require_verified(dir);
  return scrub_dir(dir, policy, dry_run);
}

ScrubOutcome publish_run(const fs::path& run_dir, const fs::path& out_root,
                         const ScrubPolicy& policy) {
  require_verified(run_dir);
  const std::string name = run_dir.filename().string();
  const fs::path dest = out_root / name;
  std::error_code ec;
  if (fs::exists(dest, ec)) {
    throw ScrubError(dest.string() + " already exists; remove it or publish to another --out");
  }
  // A copy into the record itself would copy itself (and the copy would be part of the record).
  const fs::path run_abs = fs::weakly_canonical(run_dir, ec);
  const fs::path out_abs = fs::weakly_canonical(out_root, ec);
  const auto [r, o] = std::mismatch(run_abs.begin(), run_abs.end(), out_abs.begin(), out_abs.end());
  if (!ec && r == run_abs.end()) {
    throw ScrubError("--out " + out_root.string() + " is inside the run directory " +
                     run_dir.string() + "; publish to a directory outside it (e.g. public/)");
  }
  fs::create_directories(out_root, ec);
  if (ec) throw ScrubError("cannot create " + out_root.string() + ": " + ec.message());
  std::random_device rd;
  const fs::path tmp = out_root / ("." + name + ".publishing-" + std::to_string(rd()));
  fs::copy(run_dir, tmp, fs::copy_options::recursive, ec);
  if (ec) {
    const std::string cause = ec.message();  // before remove_all() reuses ec
    fs::remove_all(tmp, ec);
    throw ScrubError("cannot copy " + run_dir.string() + " into " + out_root.string() + ": " +
                     cause + "; check that " + out_root.string() +
                     " is writable and has room, or publish to another --out");
  }
  ScrubOutcome out;
  try {
    out = scrub_dir(tmp, policy, false);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  fs::rename(tmp, dest, ec);
  if (ec) {
    const std::string cause = ec.message();
    fs::remove_all(tmp, ec);
    throw ScrubError("cannot move the scrubbed copy to " + dest.string() + ": " + cause);
  }
  return out;
}

}  // namespace dyno::record
