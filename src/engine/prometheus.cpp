#include "engine/prometheus.h"

#include <charconv>
#include <cmath>
#include <system_error>
#include <unordered_map>
#include <utility>

namespace dyno::engine {
namespace {

bool is_blank(char c) { return c == ' ' || c == '\t'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_label_start(char c) { return is_alpha(c) || c == '_'; }
bool is_label_char(char c) { return is_label_start(c) || is_digit(c); }
bool is_metric_start(char c) { return is_label_start(c) || c == ':'; }
bool is_metric_char(char c) { return is_metric_start(c) || is_digit(c); }

/// A float as Prometheus writes it: decimal or exponent notation, NaN, +Inf, -Inf (and the
/// other spellings Go's ParseFloat accepts: inf, Infinity, nan, in any case).
std::optional<double> parse_double(std::string_view token) {
  if (!token.empty() && token.front() == '+') {
    token.remove_prefix(1);
    if (!token.empty() && (token.front() == '+' || token.front() == '-')) return std::nullopt;
  }
  if (token.empty()) return std::nullopt;
  double value = 0.0;
  const char* end = token.data() + token.size();
  const auto [ptr, ec] = std::from_chars(token.data(), end, value);
  if (ec != std::errc{} || ptr != end) return std::nullopt;
  return value;
}

std::optional<std::int64_t> parse_int64(std::string_view token) {
  if (!token.empty() && token.front() == '+') {
    token.remove_prefix(1);
    if (!token.empty() && token.front() == '-') return std::nullopt;
  }
  if (token.empty()) return std::nullopt;
  std::int64_t value = 0;
  const char* end = token.data() + token.size();
  const auto [ptr, ec] = std::from_chars(token.data(), end, value);
  if (ec != std::errc{} || ptr != end) return std::nullopt;
  return value;
}

std::optional<MetricType> parse_type(std::string_view token) {
  std::string lower(token);
  for (char& c : lower) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  if (lower == "counter") return MetricType::kCounter;
  if (lower == "gauge") return MetricType::kGauge;
  if (lower == "histogram") return MetricType::kHistogram;
  if (lower == "summary") return MetricType::kSummary;
  if (lower == "untyped") return MetricType::kUntyped;
  return std::nullopt;
}

/// The suffixed sample names a family of `type` may hold besides its own name.
std::vector<std::string_view> suffixes_of(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return {"_total"};
    case MetricType::kHistogram:
      return {"_bucket", "_sum", "_count"};
    case MetricType::kSummary:
      return {"_sum", "_count"};
    case MetricType::kGauge:
    case MetricType::kUntyped:
      break;
  }
  return {};
}

/// A cursor over one line (without its line ending).
class Line {
 public:
  Line(std::string_view text, std::size_t number) : text_(text), number_(number) {}

  [[noreturn]] void fail(const std::string& what) const { throw PrometheusError(number_, what); }

  [[nodiscard]] bool at_end() const { return pos_ >= text_.size(); }
  [[nodiscard]] char peek() const { return text_[pos_]; }
  void advance() { ++pos_; }
  void skip_blanks() {
    while (!at_end() && is_blank(peek())) ++pos_;
  }
  /// Characters up to the next blank or the end of the line.
  std::string_view token() {
    const std::size_t start = pos_;
    while (!at_end() && !is_blank(peek())) ++pos_;
    return text_.substr(start, pos_ - start);
  }
  std::string_view rest() {
    const std::string_view out = text_.substr(pos_);
    pos_ = text_.size();
    return out;
  }
  /// [a-zA-Z_:][a-zA-Z0-9_:]* at the cursor; "" when the cursor is not at a name start.
  std::string_view metric_name() {
    const std::size_t start = pos_;
    if (!at_end() && is_metric_start(peek())) {
      while (!at_end() && is_metric_char(peek())) ++pos_;
    }
    return text_.substr(start, pos_ - start);
  }
  std::string_view label_name() {
    const std::size_t start = pos_;
    if (!at_end() && is_label_start(peek())) {
      while (!at_end() && is_label_char(peek())) ++pos_;
    }
    return text_.substr(start, pos_ - start);
  }

 private:
  std::string_view text_;
  std::size_t number_;
  std::size_t pos_ = 0;
};

std::string unescape_help(Line& line, std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\') {
      out.push_back(text[i]);
      continue;
    }
    if (i + 1 == text.size()) line.fail("HELP text ends in a lone backslash");
    const char next = text[++i];
    if (next == '\\') {
      out.push_back('\\');
    } else if (next == 'n') {
      out.push_back('\n');
    } else {
      line.fail(std::string("unknown escape sequence '\\") + next + "' in HELP text");
    }
  }
  return out;
}

/// Parses `{name="value",…}` with the cursor on '{'.
std::map<std::string, std::string> parse_labels(Line& line, std::string_view metric) {
  std::map<std::string, std::string> labels;
  line.advance();  // '{'
  line.skip_blanks();
  while (true) {
    if (line.at_end()) line.fail("unterminated label set of '" + std::string(metric) + "'");
    if (line.peek() == '}') {
      line.advance();
      return labels;
    }
    const std::string name(line.label_name());
    if (name.empty()) {
      line.fail("expected a label name or '}' in the labels of '" + std::string(metric) + "'");
    }
    line.skip_blanks();
    if (line.at_end() || line.peek() != '=') line.fail("expected '=' after label '" + name + "'");
    line.advance();
    line.skip_blanks();
    if (line.at_end() || line.peek() != '"') {
      line.fail("expected '\"' to open the value of label '" + name + "'");
    }
    line.advance();
    std::string value;
    bool closed = false;
    while (!line.at_end()) {
      const char c = line.peek();
      line.advance();
      if (c == '"') {
        closed = true;
        break;
      }
      if (c != '\\') {
        value.push_back(c);
        continue;
      }
      if (line.at_end()) break;
      const char next = line.peek();
      line.advance();
      if (next == '\\' || next == '"') {
        value.push_back(next);
      } else if (next == 'n') {
        value.push_back('\n');
      } else {
        line.fail(std::string("unknown escape sequence '\\") + next + "' in the value of label '" +
                  name + "'");
      }
    }
    if (!closed) line.fail("unterminated string in the value of label '" + name + "'");
    if (!labels.emplace(name, std::move(value)).second) {
      line.fail("duplicate label '" + name + "' in '" + std::string(metric) + "'");
    }
    line.skip_blanks();
    if (line.at_end()) line.fail("unterminated label set of '" + std::string(metric) + "'");
    if (line.peek() == ',') {
      line.advance();
      line.skip_blanks();  // a trailing comma is allowed: the loop then sees '}'
    } else if (line.peek() != '}') {
      line.fail("expected ',' or '}' after the value of label '" + name + "'");
    }
  }
}

class Parser {
 public:
  Exposition finish() && { return std::move(exposition_); }

  void parse_line(std::string_view text, std::size_t number) {
    Line line(text, number);
    line.skip_blanks();
    if (line.at_end()) return;
    if (line.peek() == '#') {
      parse_comment(line);
    } else {
      parse_sample(line);
    }
  }

 private:
  struct State {
    bool has_type = false;
    bool has_help = false;
  };

  Family* lookup(std::string_view name) {
    const auto it = index_.find(std::string(name));
    return it == index_.end() ? nullptr : &exposition_.families[it->second];
  }

  Family& declare(std::string_view name) {
    if (Family* family = lookup(name)) return *family;
    index_.emplace(std::string(name), exposition_.families.size());
    Family family;
    family.name = std::string(name);
    exposition_.families.push_back(std::move(family));
    states_.emplace_back();
    return exposition_.families.back();
  }

  State& state_of(const Family& family) {
    return states_[static_cast<std::size_t>(&family - exposition_.families.data())];
  }

  void parse_comment(Line& line) {
    line.advance();  // '#'
    line.skip_blanks();
    const std::string_view keyword = line.token();
    if (keyword != "HELP" && keyword != "TYPE") return;  // a plain comment
    line.skip_blanks();
    if (line.at_end()) return;  // "# HELP" alone: a comment, as Prometheus reads it
    const std::string_view name = line.metric_name();
    if (name.empty() || (!line.at_end() && !is_blank(line.peek()))) {
      line.fail("invalid metric name '" + std::string(name) + std::string(line.token()) +
                "' in a " + std::string(keyword) + " line");
    }
    line.skip_blanks();
    if (keyword == "HELP") {
      std::string help = unescape_help(line, line.rest());
      Family& family = declare(name);
      State& state = state_of(family);
      if (state.has_help) line.fail("second HELP line for '" + std::string(name) + "'");
      state.has_help = true;
      family.help = std::move(help);
      return;
    }
    const std::string_view type_token = line.token();
    if (type_token.empty()) line.fail("TYPE line for '" + std::string(name) + "' has no type");
    const std::optional<MetricType> type = parse_type(type_token);
    if (!type) line.fail("unknown metric type '" + std::string(type_token) + "'");
    line.skip_blanks();
    if (!line.at_end()) {
      line.fail("unexpected text '" + std::string(line.rest()) + "' after the TYPE of '" +
                std::string(name) + "'");
    }
    for (const std::string_view suffix : suffixes_of(*type)) {
      const Family* split = lookup(std::string(name) + std::string(suffix));
      if (split != nullptr && split->type == MetricType::kUntyped && !split->samples.empty()) {
        line.fail("TYPE line for '" + std::string(name) + "' after its samples");
      }
    }
    Family& family = declare(name);
    State& state = state_of(family);
    if (state.has_type) line.fail("second TYPE line for '" + std::string(name) + "'");
    if (!family.samples.empty()) {
      line.fail("TYPE line for '" + std::string(name) + "' after its samples");
    }
    state.has_type = true;
    family.type = *type;
  }

  /// The family a sample belongs to: the one of its own name, else a histogram, summary or
  /// counter whose name it extends by an allowed suffix, else a new untyped family.
  Family& family_of(std::string_view sample_name) {
    if (Family* family = lookup(sample_name)) return *family;
    for (const std::string_view suffix : {"_bucket", "_sum", "_count", "_total"}) {
      if (!sample_name.ends_with(suffix)) continue;
      Family* base = lookup(sample_name.substr(0, sample_name.size() - suffix.size()));
      if (base == nullptr) continue;
      for (const std::string_view allowed : suffixes_of(base->type)) {
        if (allowed == suffix) return *base;
      }
    }
    return declare(sample_name);
  }

  void parse_sample(Line& line) {
    Sample sample;
    sample.name = std::string(line.metric_name());
    if (sample.name.empty()) {
      line.fail("expected a metric name, found '" + std::string(line.token()) + "'");
    }
    if (!line.at_end() && !is_blank(line.peek()) && line.peek() != '{') {
      line.fail("unexpected character '" + std::string(1, line.peek()) + "' in metric name '" +
                sample.name + "'");
    }
    line.skip_blanks();
    if (!line.at_end() && line.peek() == '{') {
      sample.labels = parse_labels(line, sample.name);
      if (!line.at_end() && !is_blank(line.peek())) {
        line.fail("expected a blank between the labels and the value of '" + sample.name + "'");
      }
      line.skip_blanks();
    }
    if (line.at_end()) line.fail("missing value for '" + sample.name + "'");
    const std::string_view value_token = line.token();
    const std::optional<double> value = parse_double(value_token);
    if (!value) {
      line.fail("bad value '" + std::string(value_token) + "' for '" + sample.name + "'");
    }
    sample.value = *value;
    line.skip_blanks();
    if (!line.at_end()) {
      const std::string_view timestamp_token = line.token();
      sample.timestamp_ms = parse_int64(timestamp_token);
      if (!sample.timestamp_ms) {
        line.fail("bad timestamp '" + std::string(timestamp_token) + "' for '" + sample.name + "'");
      }
      line.skip_blanks();
      if (!line.at_end()) {
        line.fail("unexpected text '" + std::string(line.rest()) + "' after the timestamp of '" +
                  sample.name + "'");
      }
    }
    Family& family = family_of(sample.name);
    check_shape(line, family, sample);
    family.samples.push_back(std::move(sample));
  }

  /// Histogram and summary samples carry the label their type requires.
  static void check_shape(Line& line, const Family& family, const Sample& sample) {
    const auto require_float_label = [&](const std::string& label) {
      const auto it = sample.labels.find(label);
      if (it == sample.labels.end()) {
        line.fail("'" + sample.name + "' of " + std::string(metric_type_name(family.type)) + " '" +
                  family.name + "' has no '" + label + "' label");
      }
      if (!parse_double(it->second)) {
        line.fail("bad '" + label + "' value '" + it->second + "' for '" + sample.name + "'");
      }
    };
    if (family.type == MetricType::kHistogram) {
      if (sample.name == family.name) {
        line.fail("sample '" + sample.name +
                  "' of a histogram needs a _bucket, _sum or _count suffix");
      }
      if (sample.name == family.name + "_bucket") require_float_label("le");
    } else if (family.type == MetricType::kSummary && sample.name == family.name) {
      require_float_label("quantile");
    }
  }

  Exposition exposition_;
  std::unordered_map<std::string, std::size_t> index_;
  std::vector<State> states_;  // parallel to exposition_.families
};

bool labels_include(const std::map<std::string, std::string>& labels,
                    const std::map<std::string, std::string>& subset) {
  for (const auto& [key, value] : subset) {
    const auto it = labels.find(key);
    if (it == labels.end() || it->second != value) return false;
  }
  return true;
}

bool is_cumulative(const Family& family, const Sample& sample) {
  switch (family.type) {
    case MetricType::kCounter:
      return true;
    case MetricType::kHistogram:
      return sample.name == family.name + "_bucket" || sample.name == family.name + "_sum" ||
             sample.name == family.name + "_count";
    case MetricType::kSummary:
      return sample.name == family.name + "_sum" || sample.name == family.name + "_count";
    case MetricType::kGauge:
    case MetricType::kUntyped:
      break;
  }
  return false;
}

}  // namespace

PrometheusError::PrometheusError(std::size_t line, const std::string& message)
    : Error(ErrorKind::input, "prometheus text line " + std::to_string(line) + ": " + message),
      line_(line) {}

std::string_view metric_type_name(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
    case MetricType::kSummary:
      return "summary";
    case MetricType::kUntyped:
      break;
  }
  return "untyped";
}

Exposition parse_prometheus(std::string_view text) {
  Parser parser;
  std::size_t number = 0;
  while (!text.empty()) {
    ++number;
    const std::size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view{} : text.substr(newline + 1);
    if (line.ends_with('\r')) line.remove_suffix(1);
    parser.parse_line(line, number);
  }
  return std::move(parser).finish();
}

const Sample* find(const Exposition& exposition, std::string_view name,
                   const std::map<std::string, std::string>& labels) {
  for (const Family& family : exposition.families) {
    for (const Sample& sample : family.samples) {
      if (sample.name == name && labels_include(sample.labels, labels)) return &sample;
    }
  }
  return nullptr;
}

std::optional<double> value_of(const Exposition& exposition, std::string_view name,
                               const std::map<std::string, std::string>& labels) {
  const Sample* sample = find(exposition, name, labels);
  if (sample == nullptr) return std::nullopt;
  return sample->value;
}

std::vector<Delta> counter_deltas(const Exposition& before, const Exposition& after) {
  std::unordered_map<std::string, std::vector<const Sample*>> earlier;
  for (const Family& family : before.families) {
    for (const Sample& sample : family.samples) earlier[sample.name].push_back(&sample);
  }
  std::vector<Delta> deltas;
  for (const Family& family : after.families) {
    for (const Sample& sample : family.samples) {
      if (!is_cumulative(family, sample)) continue;
      const auto it = earlier.find(sample.name);
      if (it == earlier.end()) continue;
      const Sample* match = nullptr;
      for (const Sample* candidate : it->second) {
        if (candidate->labels == sample.labels) {
          match = candidate;
          break;
        }
      }
      if (match == nullptr) continue;
      Delta delta;
      delta.name = sample.name;
      delta.labels = sample.labels;
      delta.before = match->value;
      delta.after = sample.value;
      if (std::isnan(delta.before) || std::isnan(delta.after)) {
        delta.delta = std::nan("");
      } else if (delta.after < delta.before) {
        delta.reset = true;
        delta.delta = delta.after;
      } else {
        delta.delta = delta.after - delta.before;
      }
      deltas.push_back(std::move(delta));
    }
  }
  return deltas;
}

}  // namespace dyno::engine
