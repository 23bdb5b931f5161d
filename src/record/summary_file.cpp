#include "record/summary_file.h"

#include <algorithm>
#include <boost/json.hpp>
#include <stdexcept>

#include "metrics/registry.h"
#include "record/object_reader.h"
#include "record/record_json.h"
#include "record/server_section.h"

namespace dyno::record {

namespace json = boost::json;

namespace {

constexpr const char* kFile = "summary.json";

/// Sets the value at the dotted `path` of `doc` (every step but the last an object) to null.
void make_null(json::object& doc, const std::string& path) {
  json::object* at = &doc;
  std::size_t from = 0;
  for (std::size_t dot = path.find('.'); dot != std::string::npos; dot = path.find('.', from)) {
    json::value* next = at->if_contains(path.substr(from, dot - from));
    if (next == nullptr || !next->is_object()) return;
    at = &next->get_object();
    from = dot + 1;
  }
  if (json::value* v = at->if_contains(path.substr(from))) *v = nullptr;
}

/// Reads the figures back, noting each count written null (unknown) in `unknown`.
class FiguresReader {
 public:
  explicit FiguresReader(std::vector<std::string>* unknown) : unknown_(unknown) {}

  /// A count that may be null (unknown): 0 then, and its path noted.
  std::uint64_t count(const ObjectReader& r, const char* key) const {
    if (r.is_null(key)) {
      if (unknown_ != nullptr) unknown_->push_back(r.name(key));
      return 0;
    }
    return r.uint(key);
  }

  metrics::Distribution distribution(const ObjectReader& r) const {
    return r.distribution(unknown_);
  }

  /// One figure section (throughput, quality, latency_ms, …) as the registry lists it.
  void section(const ObjectReader& root, std::string_view name, metrics::Summary& s) const {
    const std::string key(name);
    const ObjectReader r = root.object(key.c_str());
    for (const metrics::Figure* f : metrics::figures_in(name)) {
      const std::string leaf(metrics::leaf(*f));
      if (f->dist != nullptr) {
        s.*(f->dist) = distribution(r.object(leaf.c_str()));
      } else if (f->value != nullptr) {
        s.*(f->value) = r.opt_number(leaf.c_str());
      } else if (f->count != nullptr) {
        s.*(f->count) = r.opt_uint(leaf.c_str());
      }
    }
  }

  metrics::CacheTotals cache_totals(const ObjectReader& r) const {
    metrics::CacheTotals c;
    c.requests = r.uint("requests");
    c.prompt_tokens = r.integer("prompt_tokens");
    c.cached_tokens = r.integer("cached_tokens");
    c.hit_rate = r.opt_number("hit_rate");
    return c;
  }

  metrics::PrefixCacheFigures prefix_cache(const ObjectReader& r) const {
    metrics::PrefixCacheFigures f;
    f.totals = cache_totals(r);
    f.source = r.string("source");
    const ObjectReader fit = r.object("ttft_vs_uncached");
    f.ttft_intercept_ms = fit.opt_number("intercept_ms");
    f.ttft_ms_per_1k_uncached = fit.opt_number("ms_per_1k_uncached_tokens");
    f.ttft_fit_r2 = fit.opt_number("r2");
    for (const json::value& b : fit.array("buckets")) {
      const ObjectReader br = fit.element(b, "buckets");
      f.buckets.push_back({br.integer("uncached_min"), br.integer("uncached_max"),
                           br.uint("requests"), br.opt_number("ttft_p50_ms")});
    }
    return f;
  }

  metrics::SessionFigures sessions(const ObjectReader& r) const {
    metrics::SessionFigures f;
    f.sessions = r.uint("sessions");
    f.completed = r.uint("completed");
    f.failed = r.uint("failed");
    f.cut = r.uint("cut");
    f.turns = distribution(r.object("turns"));
    f.duration_s = distribution(r.object("duration_s"));
    f.input_tokens = distribution(r.object("input_tokens"));
    f.output_tokens = distribution(r.object("output_tokens"));
    for (const json::value& t : r.array("per_turn")) {
      const ObjectReader tr = r.element(t, "per_turn");
      metrics::TurnFigures turn;
      turn.turn = tr.integer("turn");
      turn.requests = tr.uint("requests");
      turn.failed = tr.uint("failed");
      turn.ttft_ms = distribution(tr.object("ttft_ms"));
      turn.input_tokens = distribution(tr.object("input_tokens"));
      if (!tr.is_null("cache")) turn.cache = cache_totals(tr.object("cache"));
      f.per_turn.push_back(std::move(turn));
    }
    return f;
  }

  std::vector<metrics::Warning> warnings(const ObjectReader& r) const {
    std::vector<metrics::Warning> out;
    for (const json::value& w : r.array("warnings")) {
      const ObjectReader wr = r.element(w, "warnings");
      const std::string name = wr.string("code");
      const std::optional<metrics::WarningCode> code = metrics::warning_code_from(name);
      if (!code) wr.fail(wr.name("code"), "is '" + name + "', not a warning this dyno knows");
      out.push_back({*code, wr.string("message"), wr.string("hint")});
    }
    return out;
  }

  metrics::Summary summary(const ObjectReader& r) const {
    metrics::Summary s;
    s.definition_set = r.string("definition_set");
    // The one percentile method dyno computes and writes: a record stating another would be
    // read back, and shown, as dyno's.
    if (r.string("percentile_method") != kPercentileMethod) {
      r.fail(r.name("percentile_method"), std::string("is not dyno's (") + kPercentileMethod + ")");
    }
    const ObjectReader req = r.object("requests");
    s.requests_total = count(req, "total");
    s.requests_ok = count(req, "ok");
    s.requests_failed = count(req, "failed");
    s.requests_cancelled = count(req, "cancelled");
    s.warmup_requests = count(req, "warmup_discarded");
    s.error_rate = req.opt_number("error_rate");
    for (const auto& kv : req.object("errors_by_category").raw()) {
      if (!kv.value().is_number()) {
        req.fail(req.name("errors_by_category") + "." + std::string(kv.key()), "is not a number");
      }
      s.errors_by_category[std::string(kv.key())] = kv.value().to_number<std::uint64_t>();
    }
    if (req.has("errors_by_message")) {
      for (const json::value& m : req.array("errors_by_message")) {
        const ObjectReader mr = req.element(m, "errors_by_message");
        s.errors_by_message.push_back(
            {mr.string("category"), mr.string("message"), mr.uint("count")});
      }
      s.errors_other_messages = req.uint("errors_other_messages");
    }
    const ObjectReader tokens = r.object("tokens");
    s.input_tokens_complete = !tokens.is_null("input_total");
    if (s.input_tokens_complete) s.input_tokens_total = tokens.integer("input_total");
    if (tokens.is_null("output_total")) {
      unknown_->push_back("tokens.output_total");
    } else {
      s.output_tokens_total = tokens.integer("output_total");
    }
    for (const auto& kv : tokens.object("count_sources").raw()) {
      if (!kv.value().is_number()) {
        tokens.fail(tokens.name("count_sources") + "." + std::string(kv.key()), "is not a number");
      }
      s.token_count_sources[std::string(kv.key())] = kv.value().to_number<std::uint64_t>();
    }
    s.tokens_per_event = tokens.opt_number("tokens_per_event");
    for (const char* name :
         {"throughput", "quality", "latency_ms", "rates_tok_s", "lengths_tokens"}) {
      section(r, name, s);
    }
    const ObjectReader client = r.object("client");
    s.client_cpu_s = client.opt_number("cpu_s");
    s.client_peak_rss_bytes = client.opt_number("peak_rss_bytes");
    s.client_loop_lag_ms = distribution(client.object("loop_lag_ms"));
    if (client.has("cpu_scope")) {
      s.client_cpu_scope = client.string("cpu_scope");
      s.client_loop_cpu_s = client.opt_number("loop_cpu_s");
      s.client_threads = static_cast<unsigned>(client.opt_uint("threads").value_or(1));
    }
    if (r.has("sessions")) s.sessions = sessions(r.object("sessions"));
    if (r.has("prefix_cache") && !is_engine_prefix_cache(r)) {
      s.prefix_cache = prefix_cache(r.object("prefix_cache"));
    }
    s.warnings = warnings(r);
    return s;
  }

  /// `prefix_cache` made from the engine's /metrics counters (engine/server_metrics.h), not
  /// from the requests' cached counts.
  static bool is_engine_prefix_cache(const ObjectReader& r) {
    const json::value& v = r.at("prefix_cache");
    const json::value* source = v.is_object() ? v.as_object().if_contains("source") : nullptr;
    return source != nullptr && source->is_string() && source->as_string() == "metrics";
  }

 private:
  std::vector<std::string>* unknown_;
};

}  // namespace

std::optional<EnergySection> SummaryFile::energy_section() const {
  if (!energy) return std::nullopt;
  return energy_section_from_json(*energy, kFile);
}

bool SummaryFile::knows(const std::string& path) const {
  return std::find(unknown_counts.begin(), unknown_counts.end(), path) == unknown_counts.end();
}

json::object summary_file_to_json(const SummaryFile& f) {
  json::object doc{{"schema_version", kSchemaVersion}, {"run_id", f.run_id}, {"status", f.status}};
  for (auto& kv : summary_to_json(f.figures)) doc[kv.key()] = kv.value();
  if (f.client.states_connections || f.client.note) {
    json::object& client = doc["client"].as_object();
    if (f.client.states_connections) {
      client["connections_opened"] = f.client.connections_opened
                                         ? json::value(*f.client.connections_opened)
                                         : json::value(nullptr);
    }
    if (f.client.note) client["note"] = *f.client.note;
  }
  for (const std::string& path : f.unknown_counts) make_null(doc, path);
  if (f.energy) doc["energy"] = *f.energy;
  if (f.server) doc["server"] = *f.server;
  if (f.engine_prefix_cache && !f.figures.prefix_cache) {
    doc["prefix_cache"] = *f.engine_prefix_cache;
  }
  if (f.caveats) {
    json::array caveats;
    for (const Caveat& c : *f.caveats)
      caveats.push_back(json::object{{"code", c.code}, {"text", c.text}});
    doc["caveats"] = std::move(caveats);
  }
  if (f.import) {
    doc["import"] = json::object{{"format", f.import->format},
                                 {"timing", f.import->timing},
                                 {"summary_only", f.import->timing == "summary_only"}};
  }
  return doc;
}

metrics::Summary summary_from_json(const json::object& object) {
  std::vector<std::string> unknown;
  return FiguresReader(&unknown).summary(ObjectReader(object, "", kFile));
}

SummaryFile summary_file_from_json(const json::object& object) {
  const ObjectReader r(object, "", kFile);
  SummaryFile f;
  f.run_id = r.string("run_id");
  f.status = r.string("status");
  const FiguresReader figures(&f.unknown_counts);
  f.figures = figures.summary(r);
  const ObjectReader client = r.object("client");
  if (client.has("connections_opened")) {
    f.client.states_connections = true;
    f.client.connections_opened = client.opt_uint("connections_opened");
  }
  f.client.note = client.opt_string("note");
  if (r.has("energy")) {
    f.energy = r.object_value("energy");
    (void)energy_section_from_json(*f.energy, kFile);  // its errors name the key, here
  }
  if (r.has("server")) {
    f.server = r.object_value("server");
    (void)server_section_from_json(*f.server, kFile);  // its errors name the key, here
  }
  if (r.has("prefix_cache") && FiguresReader::is_engine_prefix_cache(r)) {
    f.engine_prefix_cache = r.object_value("prefix_cache");
  }
  if (r.has("caveats")) {
    f.caveats.emplace();
    for (const json::value& c : r.array("caveats")) {
      const ObjectReader cr = r.element(c, "caveats");
      f.caveats->push_back({cr.string("code"), cr.string("text")});
    }
  }
  if (r.has("import")) {
    const ObjectReader ir = r.object("import");
    f.import = ImportSection{ir.string("format"), ir.string("timing")};
  }
  return f;
}

}  // namespace dyno::record
