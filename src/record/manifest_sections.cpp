#include "record/manifest_sections.h"

#include <boost/json.hpp>
#include <initializer_list>

#include "record/object_reader.h"
#include "record/record_json.h"

namespace dyno::record {

namespace json = boost::json;

namespace {

constexpr const char* kFile = "manifest.json";

template <typename T>
json::value or_null(const std::optional<T>& v) {
  return v ? json::value(*v) : json::value(nullptr);
}

json::object text_map_to_json(const TextMap& m) {
  json::object o;
  for (const auto& [key, text] : m.entries) o[key] = text;
  return o;
}

}  // namespace

TextMap text_map_from(const ObjectReader& r) {
  TextMap m;
  for (const auto& kv : r.raw()) {
    const std::string key(kv.key());
    if (!kv.value().is_string()) r.fail(r.name(key.c_str()), "is not a string");
    m.entries.emplace_back(key, std::string(kv.value().get_string()));
  }
  return m;
}

namespace {

/// A key the schema requires: present, though it may be null.
void require(const ObjectReader& r, std::initializer_list<const char*> keys) {
  for (const char* key : keys) (void)r.at(key);
}

/// The keys of `o` not in `known`, in their order (what `extra` keeps).
json::object extra_keys(const json::object& o, std::initializer_list<std::string_view> known) {
  json::object extra;
  for (const auto& kv : o) {
    bool is_known = false;
    for (std::string_view k : known) is_known = is_known || kv.key() == k;
    if (!is_known) extra[kv.key()] = kv.value();
  }
  return extra;
}

void append(json::object& o, const json::object& extra) {
  for (const auto& kv : extra) o[kv.key()] = kv.value();
}

}  // namespace

const std::string* TextMap::find(std::string_view key) const {
  for (const auto& [k, text] : entries) {
    if (k == key) return &text;
  }
  return nullptr;
}

void TextMap::set(std::string_view key, std::string text) {
  for (auto& [k, t] : entries) {
    if (k == key) {
      t = std::move(text);
      return;
    }
  }
  entries.emplace_back(std::string(key), std::move(text));
}

// ---- harness ----------------------------------------------------------------------------

json::object harness_to_json(const HarnessIdentity& h) {
  json::object o{{"name", h.name},
                 {"version", h.version},
                 {"git_commit", h.git_commit},
                 {"git_dirty", h.git_dirty},
                 {"build_type", h.build_type},
                 {"executable_sha256", or_null(h.executable_sha256)}};
  if (h.unknown) o["unknown"] = text_map_to_json(*h.unknown);
  append(o, h.extra);
  return o;
}

HarnessIdentity harness_from_json(const json::object& o, const std::string& path) {
  const ObjectReader r(o, path, kFile);
  require(r, {"executable_sha256"});
  HarnessIdentity h;
  h.name = r.string("name");
  h.version = r.string("version");
  h.git_commit = r.string("git_commit");
  h.git_dirty = r.boolean("git_dirty");
  h.build_type = r.string("build_type");
  h.executable_sha256 = r.opt_string("executable_sha256");
  if (r.has("unknown")) h.unknown = text_map_from(r.object("unknown"));
  h.extra = extra_keys(o, {"name", "version", "git_commit", "git_dirty", "build_type",
                           "executable_sha256", "unknown"});
  return h;
}

// ---- model ------------------------------------------------------------------------------

json::object model_to_json(const ModelIdentity& m) {
  json::object o{
      {"id", m.id}, {"revision", or_null(m.revision)}, {"fingerprint", or_null(m.fingerprint)}};
  if (m.format) o["format"] = *m.format;
  if (m.architecture) o["architecture"] = *m.architecture;
  if (m.parameter_count) o["parameter_count"] = *m.parameter_count;
  if (m.quantization) o["quantization"] = *m.quantization;
  if (m.context_length) o["context_length"] = or_null(*m.context_length);
  if (m.tokenizer_model) o["tokenizer_model"] = *m.tokenizer_model;
  if (m.dtypes) {
    json::object dtypes;
    for (const auto& [dtype, n] : *m.dtypes) dtypes[dtype] = n;
    o["dtypes"] = std::move(dtypes);
  }
  if (m.shards) o["shards"] = *m.shards;
  if (m.fingerprint_method) o["fingerprint_method"] = *m.fingerprint_method;
  if (m.unknown) o["unknown"] = text_map_to_json(*m.unknown);
  append(o, m.extra);
  return o;
}

ModelIdentity model_from_json(const json::object& o, const std::string& path) {
  const ObjectReader r(o, path, kFile);
  require(r, {"revision", "fingerprint"});
  ModelIdentity m;
  m.id = r.string("id");
  m.revision = r.opt_string("revision");
  m.fingerprint = r.opt_string("fingerprint");
  m.format = r.opt_string("format");
  m.architecture = r.opt_string("architecture");
  m.parameter_count = r.opt_uint("parameter_count");
  m.quantization = r.opt_string("quantization");
  if (r.has("context_length")) m.context_length = r.opt_uint("context_length");
  m.tokenizer_model = r.opt_string("tokenizer_model");
  if (r.has("dtypes")) {
    const ObjectReader d = r.object("dtypes");
    m.dtypes.emplace();
    for (const auto& kv : d.raw()) {
      const std::string dtype(kv.key());
      m.dtypes->emplace_back(dtype, d.uint(dtype.c_str()));
    }
  }
  m.shards = r.opt_uint("shards");
  m.fingerprint_method = r.opt_string("fingerprint_method");
  if (r.has("unknown")) m.unknown = text_map_from(r.object("unknown"));
  m.extra = extra_keys(o, {"id", "revision", "fingerprint", "format", "architecture",
                           "parameter_count", "quantization", "context_length", "tokenizer_model",
                           "dtypes", "shards", "fingerprint_method", "unknown"});
  return m;
}

// ---- hardware ---------------------------------------------------------------------------

json::object device_to_json(const DeviceEntry& g) {
  json::array capabilities;
  for (const std::string& c : g.capabilities) capabilities.emplace_back(c);
  json::object o{{"vendor", or_null(g.vendor)},
                 {"kind", g.kind},
                 {"index", g.index},
                 {"name", or_null(g.name)},
                 {"uuid", or_null(g.uuid)},
                 {"pci_bus_id", or_null(g.pci_bus_id)},
                 {"driver", or_null(g.driver)},
                 {"memory_total_bytes", or_null(g.memory_total_bytes)},
                 {"power_limit_w", number_or_null(g.power_limit_w)},
                 {"capabilities", std::move(capabilities)}};
  if (g.details) o["details"] = text_map_to_json(*g.details);
  append(o, g.extra);
  return o;
}

DeviceEntry device_from_json(const json::object& o, const std::string& path) {
  const ObjectReader r(o, path, kFile);
  require(
      r, {"vendor", "name", "uuid", "pci_bus_id", "driver", "memory_total_bytes", "power_limit_w"});
  DeviceEntry g;
  g.vendor = r.opt_string("vendor");
  g.kind = r.string("kind");
  g.index = r.uint("index");
  g.name = r.opt_string("name");
  g.uuid = r.opt_string("uuid");
  g.pci_bus_id = r.opt_string("pci_bus_id");
  g.driver = r.opt_string("driver");
  g.memory_total_bytes = r.opt_int("memory_total_bytes");
  g.power_limit_w = r.opt_number("power_limit_w");
  g.capabilities = r.strings("capabilities");
  if (r.has("details")) g.details = text_map_from(r.object("details"));
  g.extra = extra_keys(o, {"vendor", "kind", "index", "name", "uuid", "pci_bus_id", "driver",
                           "memory_total_bytes", "power_limit_w", "capabilities", "details"});
  return g;
}

json::object hardware_to_json(const HardwareIdentity& h) {
  json::array gpus;
  for (const DeviceEntry& g : h.gpus) gpus.push_back(device_to_json(g));
  json::object o{{"host", or_null(h.host)},
                 {"cpu_model", or_null(h.cpu_model)},
                 {"cpu_cores", or_null(h.cpu_cores)},
                 {"ram_bytes", or_null(h.ram_bytes)},
                 {"gpus", std::move(gpus)}};
  if (h.unknown) o["unknown"] = text_map_to_json(*h.unknown);
  if (h.label) o["label"] = *h.label;
  append(o, h.extra);
  return o;
}

HardwareIdentity hardware_from_json(const json::object& o, const std::string& path) {
  const ObjectReader r(o, path, kFile);
  require(r, {"host", "cpu_model", "cpu_cores", "ram_bytes"});
  HardwareIdentity h;
  h.host = r.opt_string("host");
  h.cpu_model = r.opt_string("cpu_model");
  h.cpu_cores = r.opt_uint("cpu_cores");
  h.ram_bytes = r.opt_int("ram_bytes");
  for (const json::value& g : r.array("gpus")) {
    h.gpus.push_back(device_from_json(r.element(g, "gpus").raw(), r.name("gpus") + "[]"));
  }
  if (r.has("unknown")) h.unknown = text_map_from(r.object("unknown"));
  h.label = r.opt_string("label");
  h.extra =
      extra_keys(o, {"host", "cpu_model", "cpu_cores", "ram_bytes", "gpus", "unknown", "label"});
  return h;
}

// ---- workload.protocol -------------------------------------------------------------------

json::object protocol_to_json(const ProtocolRef& p) {
  json::object o{{"name", p.name}, {"version", p.version}};
  if (p.params) o["params"] = *p.params;
  if (p.pairs_as) o["pairs_as"] = *p.pairs_as;
  if (p.cell) o["cell"] = *p.cell;
  if (p.cell_params) o["cell_params"] = *p.cell_params;
  if (p.repetition) o["repetition"] = *p.repetition;
  if (p.repetitions) o["repetitions"] = *p.repetitions;
  if (p.selection) {
    json::object selection{{"rule", p.selection->rule},
                           {"metric", p.selection->metric},
                           {"repetitions", p.selection->repetitions}};
    append(selection, p.selection->extra);
    o["selection"] = std::move(selection);
  }
  append(o, p.extra);
  return o;
}

ProtocolRef protocol_from_json(const json::object& o, const std::string& path) {
  const ObjectReader r(o, path, kFile);
  ProtocolRef p;
  p.name = r.string("name");
  p.version = r.integer("version");
  if (r.has("params")) p.params = r.object_value("params");
  p.pairs_as = r.opt_string("pairs_as");
  p.cell = r.opt_string("cell");
  if (r.has("cell_params")) p.cell_params = r.object_value("cell_params");
  p.repetition = r.opt_uint("repetition");
  p.repetitions = r.opt_uint("repetitions");
  if (r.has("selection")) {
    const ObjectReader s = r.object("selection");
    p.selection = ProtocolSelection{s.string("rule"), s.string("metric"), s.uint("repetitions"),
                                    extra_keys(s.raw(), {"rule", "metric", "repetitions"})};
  }
  p.extra = extra_keys(o, {"name", "version", "params", "pairs_as", "cell", "cell_params",
                           "repetition", "repetitions", "selection"});
  return p;
}

}  // namespace dyno::record
