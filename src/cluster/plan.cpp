#include "cluster/plan.h"

#include <algorithm>
#include <boost/json.hpp>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "engine/spec.h"
#include "engine/toml.h"
#include "engine/toml_reader.h"
#include "json/json_text.h"

namespace dyno::cluster {

namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

enum class ArgType { text, path, boolean, object };

/// The flags a plan may give each protocol (`dyno <kind> --help`); the campaign sets
/// --engine, --model, --runs-root, --label, --repeat and --quiet itself.
const std::map<std::string, ArgType>& common_args() {
  static const std::map<std::string, ArgType> args = {
      {"api", ArgType::text},
      {"warmup", ArgType::text},
      {"max_tokens", ArgType::text},
      {"temperature", ArgType::text},
      {"seed", ArgType::text},
      {"stream", ArgType::path},
      {"input_tokens", ArgType::text},
      {"output_tokens", ArgType::text},
      {"slo", ArgType::text},
      {"arrival", ArgType::text},
      {"burstiness", ArgType::text},
      {"no_stream", ArgType::boolean},
      {"keep_outputs", ArgType::boolean},
      {"no_chunk_times", ArgType::boolean},
      {"connect_timeout", ArgType::text},
      {"first_token_timeout", ArgType::text},
      {"timeout", ArgType::text},
      {"idle_timeout", ArgType::text},
      {"error_budget", ArgType::text},
      {"client_threads", ArgType::text},
      {"unreachable_after", ArgType::text},
      {"extra_body", ArgType::object},
      {"extra_body_override", ArgType::boolean},
      {"telemetry", ArgType::text},
      {"telemetry_period_ms", ArgType::text},
      {"idle_baseline", ArgType::text},
  };
  return args;
}

const std::map<std::string, std::map<std::string, ArgType>>& kind_args() {
  static const std::map<std::string, std::map<std::string, ArgType>> args = {
      {"run",
       {{"concurrency", ArgType::text},
        {"rate", ArgType::text},
        {"requests", ArgType::text},
        {"duration", ArgType::text},
        {"schedule", ArgType::text},
        {"time_scale", ArgType::text},
        {"time_window", ArgType::text},
        {"cycle", ArgType::boolean}}},
      {"sweep",
       {{"concurrencies", ArgType::text},
        {"rates", ArgType::text},
        {"min_requests", ArgType::text},
        {"per_slot", ArgType::text},
        {"rate_duration", ArgType::text},
        {"select", ArgType::text}}},
      {"ladder",
       {{"depths", ArgType::text},
        {"prefill_sizes", ArgType::text},
        {"decode_tokens", ArgType::text},
        {"select", ArgType::text}}},
      {"speed", {{"passes", ArgType::text}, {"burst", ArgType::text}, {"select", ArgType::text}}},
      {"real", {{"select", ArgType::text}}},
      {"capacity",
       {{"by", ArgType::text},
        {"min", ArgType::text},
        {"max", ArgType::text},
        {"resolution", ArgType::text},
        {"min_requests", ArgType::text},
        {"per_slot", ArgType::text},
        {"rate_duration", ArgType::text},
        {"confidence", ArgType::text},
        {"predict_with", ArgType::path},
        {"gpu_hour_cost", ArgType::text}}},
  };
  return args;
}

/// Flags the campaign itself gives every cell.
const std::set<std::string>& reserved_args() {
  static const std::set<std::string> r = {
      "engine",        "url",       "model", "model_file", "model_revision",  "plugin",
      "plugin_config", "runs_root", "label", "repeat",     "repeat_boundary", "resume",
      "json",          "quiet",     "q",     "color",      "profile"};
  return r;
}

/// Names of arms, models, protocols and the plan: they become labels and file names.
bool plain_name(const std::string& s) {
  static const std::regex re("[A-Za-z0-9][A-Za-z0-9._-]{0,31}");
  return std::regex_match(s, re);
}

// Plan strings are never empty: an empty name, path or value is a mistake, not a default.
class Reader : public engine::TomlReader<PlanError> {
 public:
  using TomlReader::TomlReader;

  std::optional<std::string> str(const json::object& o, const std::string& key,
                                 const std::string& path) const {
    std::optional<std::string> s = TomlReader::str(o, key, path);
    if (s && s->empty()) fail(path, "expected a non-empty string");
    if (s) refuse_control(*s, path);
    return s;
  }

  /// Every string of a plan reaches a batch script, where a line break would start a line of
  /// its own (an #SBATCH line split, a command run with the cell).
  void refuse_control(const std::string& s, const std::string& path) const {
    for (const unsigned char c : s) {
      if (c < 0x20 || c == 0x7f) {
        fail(path, "a control character in a value that goes into a batch script; remove it");
      }
    }
  }
};

/// A value that goes into an #SBATCH line: no space, quote, newline or shell character.
std::string sbatch_value(const Reader& r, const json::object& o, const std::string& key,
                         const std::string& path, std::optional<std::string>& out) {
  out = r.str(o, key, path);
  static const std::regex re("[A-Za-z0-9._:,&|!\\[\\]*+@=/-]{1,200}");
  if (out && !std::regex_match(*out, re)) {
    r.fail(path, "'" + *out +
                     "' has a character Slurm's option does not take here (allowed: "
                     "letters, digits and . _ : , & | ! [ ] * + @ = / -)");
  }
  return out.value_or("");
}

Resources read_resources(const Reader& r, const json::object& parent, const std::string& prefix) {
  Resources res;
  const std::string at = prefix.empty() ? "resources" : prefix + ".resources";
  const json::object* t = r.table(parent, "resources", at);
  if (t == nullptr) return res;
  r.only_keys(*t,
              {"gpus", "gpu_type", "constraint", "time_limit", "partition", "cpus", "mem",
               "account", "qos"},
              at);
  res.gpus = r.integer(*t, "gpus", at + ".gpus", 0, 1024);
  res.cpus = r.integer(*t, "cpus", at + ".cpus", 1, 100000);
  sbatch_value(r, *t, "gpu_type", at + ".gpu_type", res.gpu_type);
  sbatch_value(r, *t, "constraint", at + ".constraint", res.constraint);
  sbatch_value(r, *t, "partition", at + ".partition", res.partition);
  sbatch_value(r, *t, "account", at + ".account", res.account);
  sbatch_value(r, *t, "qos", at + ".qos", res.qos);
  sbatch_value(r, *t, "mem", at + ".mem", res.mem);
  if (res.mem && !std::regex_match(*res.mem, std::regex("[0-9]+[KMGT]?"))) {
    r.fail(at + ".mem", "'" + *res.mem + "': write a size such as \"64G\" or \"512M\"");
  }
  sbatch_value(r, *t, "time_limit", at + ".time_limit", res.time_limit);
  // Slurm's forms: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S.
  static const std::regex time_re(
      "[0-9]+|[0-9]+:[0-9]{1,2}|[0-9]+:[0-9]{1,2}:[0-9]{1,2}|[0-9]+-[0-9]{1,2}(:[0-9]{1,2}){0,2}");
  if (res.time_limit && !std::regex_match(*res.time_limit, time_re)) {
    r.fail(at + ".time_limit",
           "'" + *res.time_limit + "': write minutes (\"90\"), \"HH:MM:SS\" or \"D-HH:MM:SS\"");
  }
  return res;
}

fs::path resolve(const fs::path& base, const std::string& p) {
  const fs::path path(p);
  return path.is_absolute() ? path : fs::absolute(base / path).lexically_normal();
}

/// The text a TOML value gives a flag: strings as written, numbers as JSON writes them,
/// arrays of them joined by commas ([1, 4, 16] → "1,4,16").
std::string arg_text(const Reader& r, const json::value& v, const std::string& path) {
  if (v.is_string()) {
    r.refuse_control(std::string(v.as_string()), path);
    return std::string(v.as_string());
  }
  if (v.is_int64() || v.is_double()) return json_text::compact(v);
  if (v.is_array()) {
    std::string out;
    for (const auto& e : v.as_array()) {
      if (e.is_array() || e.is_object() || e.is_bool()) {
        r.fail(path, "expected an array of numbers or strings");
      }
      out += (out.empty() ? "" : ",") + arg_text(r, e, path);
    }
    return out;
  }
  r.fail(path, "expected a string, a number or an array of them");
}

Protocol read_protocol(const Reader& r, const std::string& name, const json::object& t,
                       const fs::path& base) {
  const std::string at = "protocols." + name;
  r.only_keys(t, {"kind", "args", "resources"}, at);
  Protocol p;
  p.name = name;
  p.kind = r.str(t, "kind", at + ".kind").value_or(name);
  const auto& kinds = kind_args();
  if (kinds.count(p.kind) == 0) {
    r.fail(
        t.contains("kind") ? at + ".kind" : at,
        "unknown protocol '" + p.kind +
            "'; give kind = one of run, sweep, ladder, speed, capacity, real (the dyno command)");
  }
  p.resources = read_resources(r, t, at);
  const json::object* args = r.table(t, "args", at + ".args");
  if (args == nullptr) return p;
  for (const auto& kv : *args) {
    const std::string key(kv.key());
    const std::string path = at + ".args." + key;
    if (reserved_args().count(key) != 0) {
      r.fail(path, "set by the campaign itself (from the arm, the model and the plan); remove it");
    }
    const auto& mine = kinds.at(p.kind);
    auto it = mine.find(key);
    if (it == mine.end()) it = common_args().find(key);
    if (it == common_args().end()) {
      r.fail(path, "not a flag of dyno " + p.kind +
                       " that a plan can give (write flags without their dashes, '_' for '-': "
                       "per_slot = 8 for --per-slot 8; docs/scale.md lists them)");
    }
    std::string flag = "--" + key;
    std::replace(flag.begin(), flag.end(), '_', '-');
    if (it->second == ArgType::boolean) {
      if (!kv.value().is_bool()) r.fail(path, "expected true or false");
      if (kv.value().as_bool()) p.flags.emplace_back(flag, std::nullopt);
      continue;
    }
    if (it->second == ArgType::object) {  // a TOML table: --extra-body's JSON object
      if (!kv.value().is_object()) {
        r.fail(path,
               "expected a table of request fields, e.g. extra_body = { cache_prompt = false }");
      }
      p.flags.emplace_back(flag, json_text::compact(kv.value()));
      continue;
    }
    std::string text = arg_text(r, kv.value(), path);
    if (it->second == ArgType::path) {
      text = resolve(base, text).string();
      std::error_code ec;
      if (!fs::is_regular_file(text, ec)) r.fail(path, "no such file: " + text);
    }
    p.flags.emplace_back(flag, text);
  }
  return p;
}

Arm read_arm(const Reader& r, const std::string& name, const json::object& t,
             const fs::path& base) {
  const std::string at = "arms." + name;
  r.only_keys(t, {"engine", "resources"}, at);
  Arm a;
  a.name = name;
  const auto engine = r.str(t, "engine", at + ".engine");
  if (!engine) r.fail(at, "needs engine = \"<engine spec file>\" (as dyno run --engine takes)");
  a.engine = resolve(base, *engine);
  std::error_code ec;
  if (!fs::is_regular_file(a.engine, ec)) {
    r.fail(at + ".engine", "no such engine spec file: " + a.engine.string());
  }
  a.engine_name = engine::load_spec(a.engine.string()).name;  // its errors name its own file
  a.resources = read_resources(r, t, at);
  return a;
}

Model read_model(const Reader& r, const std::string& name, const json::object& t) {
  const std::string at = "models." + name;
  r.only_keys(t, {"model", "model_file", "model_revision", "resources"}, at);
  Model m;
  m.name = name;
  m.model = r.str(t, "model", at + ".model").value_or(name);
  m.model_file = r.str(t, "model_file", at + ".model_file");
  m.model_revision = r.str(t, "model_revision", at + ".model_revision");
  m.resources = read_resources(r, t, at);
  return m;
}

/// Each member of the table `key` of the root, checked for a plain name and a table.
template <class Read>
void read_named(const Reader& r, const json::object& root, const std::string& key,
                const std::string& example, Read read) {
  const json::object* t = r.table(root, key, key);
  if (t == nullptr || t->empty()) r.fail(key, "the plan needs at least one, e.g. " + example);
  for (const auto& kv : *t) {
    const std::string name(kv.key());
    if (!plain_name(name)) {
      r.fail(key + "." + name,
             "names are 1-32 letters, digits, '.', '_' or '-' (they go into labels and file "
             "names)");
    }
    if (!kv.value().is_object()) r.fail(key + "." + name, "expected a table");
    read(name, kv.value().as_object());
  }
}

}  // namespace

Resources Resources::merged(const Resources& over) const {
  Resources out = *this;
  if (over.gpus) out.gpus = over.gpus;
  if (over.gpu_type) out.gpu_type = over.gpu_type;
  if (over.constraint) out.constraint = over.constraint;
  if (over.time_limit) out.time_limit = over.time_limit;
  if (over.partition) out.partition = over.partition;
  if (over.cpus) out.cpus = over.cpus;
  if (over.mem) out.mem = over.mem;
  if (over.account) out.account = over.account;
  if (over.qos) out.qos = over.qos;
  return out;
}

std::vector<Cell> PlanFile::cells() const {
  std::vector<Cell> out;
  for (const Arm& a : arms) {
    for (const Model& m : models) {
      for (const Protocol& p : protocols) {
        Cell c;
        c.index = out.size() + 1;
        char id[16];
        std::snprintf(id, sizeof id, "c%02zu", c.index);
        c.id = id;
        c.name = a.name + "/" + m.name + "/" + p.name;
        c.arm = &a;
        c.model = &m;
        c.protocol = &p;
        c.resources = resources.merged(a.resources).merged(m.resources).merged(p.resources);
        out.push_back(std::move(c));
      }
    }
  }
  return out;
}

std::string resources_text(const Resources& r) {
  std::string out;
  const auto add = [&out](const std::string& k, const std::string& v) {
    out += (out.empty() ? "" : " ") + k + "=" + v;
  };
  if (r.gpus) add("gpus", std::to_string(*r.gpus) + (r.gpu_type ? ":" + *r.gpu_type : ""));
  if (r.constraint) add("constraint", *r.constraint);
  if (r.time_limit) add("time", *r.time_limit);
  if (r.partition) add("partition", *r.partition);
  if (r.cpus) add("cpus", std::to_string(*r.cpus));
  if (r.mem) add("mem", *r.mem);
  if (r.account) add("account", *r.account);
  if (r.qos) add("qos", *r.qos);
  return out.empty() ? "-" : out;
}

const std::vector<std::string>& protocol_kinds() {
  static const std::vector<std::string> kinds = {"run",   "sweep",    "ladder",
                                                 "speed", "capacity", "real"};
  return kinds;
}

std::vector<std::string> plan_args(const std::string& kind) {
  std::vector<std::string> out;
  const auto it = kind_args().find(kind);
  if (it == kind_args().end()) return out;
  for (const auto& [key, type] : it->second) out.push_back(key);
  for (const auto& [key, type] : common_args()) out.push_back(key);
  return out;
}

PlanFile load_plan_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw PlanError(file.string() + ": cannot read the plan file (does it exist?)");
  std::ostringstream ss;
  ss << in.rdbuf();
  engine::TomlDocument doc;
  try {
    doc = engine::parse_toml(ss.str(), file.string());
  } catch (const engine::TomlError& e) {
    throw PlanError(e.what());
  }
  const Reader r(doc, file.string());
  const json::object& root = doc.root;
  r.only_keys(
      root,
      {"name", "repetitions", "dyno", "runs_root", "resources", "arms", "models", "protocols"}, "");
  PlanFile plan;
  plan.file = fs::absolute(file).lexically_normal();
  const fs::path base = plan.file.parent_path();
  const auto name = r.str(root, "name", "name");
  if (!name) r.fail("", "the plan needs name = \"<campaign name>\"");
  if (!plain_name(*name)) {
    r.fail("name", "1-32 letters, digits, '.', '_' or '-' (it goes into directory names)");
  }
  plan.name = *name;
  if (const auto reps = r.integer(root, "repetitions", "repetitions", 1, 100)) {
    plan.repetitions = static_cast<std::uint32_t>(*reps);
  }
  plan.dyno = r.str(root, "dyno", "dyno");
  if (const auto rr = r.str(root, "runs_root", "runs_root")) {
    plan.runs_root = resolve(base, *rr).string();
  }
  plan.resources = read_resources(r, root, "");
  read_named(r, root, "arms", "[arms.vllm] with engine = \"vllm.toml\"",
             [&](const std::string& n, const json::object& t) {
               plan.arms.push_back(read_arm(r, n, t, base));
             });
  read_named(r, root, "models", "[models.llama-8b]",
             [&](const std::string& n, const json::object& t) {
               plan.models.push_back(read_model(r, n, t));
             });
  read_named(r, root, "protocols", "[protocols.sweep]",
             [&](const std::string& n, const json::object& t) {
               plan.protocols.push_back(read_protocol(r, n, t, base));
             });
  for (const Cell& c : plan.cells()) {
    if (c.resources.gpu_type && !c.resources.gpus) {
      r.fail("", "cell " + c.name + " has a gpu_type (" + *c.resources.gpu_type +
                     ") but no gpus: set gpus where the type is, or on the arm");
    }
  }
  if (plan.cells().size() > 999) {
    r.fail("", "more than 999 cells (arms x models x protocols); split the campaign");
  }
  return plan;
}

}  // namespace dyno::cluster
