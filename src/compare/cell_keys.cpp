#include "compare/cell_keys.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <utility>
#include <vector>

#include "compare/board.h"
#include "metrics/registry.h"

namespace dyno::compare {

namespace json = boost::json;

std::string model_of(const RunRecord& r, const std::map<std::string, std::string>& aliases) {
  const std::string& id = r.manifest.model.id;
  const auto it = aliases.find(id);
  return it == aliases.end() ? id : it->second;
}

std::string protocol_of(const RunRecord& r) {
  const record::ProtocolRef& p = r.manifest.workload.protocol;
  // Another tool's run pairs as the protocol its file names (a ledger's column), else as a
  // plain run at its load.
  if (p.name == "import") return p.pairs_as.value_or("run");
  return p.name;
}

std::string cell_of(const RunRecord& r) {
  if (const auto& c = r.manifest.workload.protocol.cell) return *c;
  const record::LoadSection& load = r.manifest.load;
  if (load.concurrency) return "c" + std::to_string(*load.concurrency);
  if (load.rate_per_s) {
    std::ostringstream s;
    s << "r" << *load.rate_per_s;
    return s.str();
  }
  if (load.replay) {
    std::ostringstream s;
    s << "replay x" << load.replay->time_scale;  // the same trace at the same speed pairs
    return s.str();
  }
  return "run";
}

void level_of(const RunRecord& r, std::string& kind, std::optional<double>& level) {
  if (const auto& params = r.manifest.workload.protocol.cell_params) {
    const json::object& p = *params;
    // A ladder's decode and prefill cells are two axes: context tokens and prompt tokens.
    const auto cell_kind = string_at(p, "kind");
    if (const auto tokens = number_at(p, "target_tokens"); tokens && cell_kind) {
      kind = *cell_kind + "_tokens";
      level = *tokens;
      return;
    }
    for (const auto& [k, kind_name] :
         {std::pair{"concurrency", "concurrency"}, std::pair{"rate_per_s", "rate"},
          std::pair{"target_tokens", "target_tokens"}}) {
      if (const auto v = number_at(p, k)) {
        kind = kind_name;
        level = *v;
        return;
      }
    }
    return;
  }
  const record::LoadSection& load = r.manifest.load;
  if (load.concurrency) {
    kind = "concurrency";
    level = static_cast<double>(*load.concurrency);
  } else if (load.rate_per_s) {
    kind = "rate";
    level = *load.rate_per_s;
  }
}

std::int64_t repetition_of(const RunRecord& r) {
  return static_cast<std::int64_t>(r.manifest.workload.protocol.repetition.value_or(1));
}

std::optional<std::size_t> median_repetition(const std::vector<std::optional<double>>& values) {
  std::vector<std::pair<double, std::size_t>> ranked;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i] && std::isfinite(*values[i])) ranked.emplace_back(*values[i], i);
  }
  if (ranked.empty()) return std::nullopt;
  std::sort(ranked.begin(), ranked.end());
  return ranked[(ranked.size() - 1) / 2].second;
}

std::optional<double> selection_metric(const RunRecord& run, const std::string& metric) {
  if (!run.has_summary()) return std::nullopt;
  return metrics::selection_value(run.summary->figures, metric);
}

}  // namespace dyno::compare
