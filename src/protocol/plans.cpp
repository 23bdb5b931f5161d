// The cells of each protocol (docs/protocols.md), from its options and the shared flags.
#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <map>
#include <sstream>

#include "engine/server_timings.h"
#include "engine_session/cell_plan.h"
#include "engine_session/stream.h"
#include "error/error.h"
#include "load/schedule.h"
#include "protocol/plan.h"
#include "record/record_json.h"
#include "record/server_section.h"
#include "workload/exact_prompt.h"
#include "workload/synthetic.h"

namespace dyno::protocol {

namespace json = boost::json;

namespace {

std::string number_text(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

json::value num(std::optional<double> v) { return record::number_or_null(v); }

json::array to_array(const std::vector<double>& values) {
  json::array a;
  for (double v : values) a.push_back(v);
  return a;
}

/// A cell spec over `requests` with the load `shape`: the shared flags applied as `dyno run`
/// applies them (load::plan, engine_session::cell_from_flags).
engine_session::CellSpec cell_over(std::vector<workload::Request> requests, std::string source,
                                   const load::CellLoad& shape, const Shared& o) {
  engine_session::CellSpec spec =
      engine_session::cell_from_flags(load::plan(o.load, shape), o.stream, o.record);
  spec.requests = std::move(requests);
  spec.stream_source = std::move(source);
  return spec;
}

/// A closed-loop cell spec over `requests`: `count` measured at `concurrency`, `warmup`
/// discarded requests first.
engine_session::CellSpec closed_cell(std::vector<workload::Request> requests, std::string source,
                                     std::uint32_t concurrency, std::uint64_t count,
                                     const Shared& o, std::uint64_t warmup = 0) {
  load::CellLoad shape;
  shape.concurrency = concurrency;
  shape.requests = count;
  shape.warmup = warmup;
  return cell_over(std::move(requests), std::move(source), shape, o);
}

/// closed_cell over `requests` as a stream gave them: the cell's hash is theirs, taken before
/// the flags fill sampling defaults (as `dyno run`'s is).
engine_session::CellSpec given_cell(std::vector<workload::Request> requests, std::string source,
                                    std::uint32_t concurrency, std::uint64_t count, const Shared& o,
                                    std::uint64_t warmup = 0) {
  const std::string sha = workload::stream_sha256(requests);
  engine_session::fill_sampling_defaults(requests, o.stream);
  engine_session::CellSpec spec =
      closed_cell(std::move(requests), std::move(source), concurrency, count, o, warmup);
  spec.stream_sha256 = sha;
  return spec;
}

/// `n` discarded copies of `first` (8 output tokens each) before `requests`: a protocol's
/// warm-up before its first cell (speed, real).
std::vector<workload::Request> with_warmup(std::vector<workload::Request> requests,
                                           std::uint64_t n) {
  std::vector<workload::Request> out;
  for (std::uint64_t i = 0; i < n; ++i) {
    workload::Request w = requests.front();
    w.id += "#warmup" + (i == 0 ? std::string() : std::to_string(i));
    w.sampling.max_tokens = 8;
    out.push_back(std::move(w));
  }
  out.insert(out.end(), std::make_move_iterator(requests.begin()),
             std::make_move_iterator(requests.end()));
  return out;
}

/// `count` synthetic requests of about `tokens` prompt tokens each, distinct per `salt`.
workload::RequestStream synthetic(const Shared& o, std::uint64_t count, std::int64_t tokens,
                                  std::int64_t output_tokens, std::uint64_t salt) {
  workload::SyntheticOptions syn;
  syn.api = o.api;
  syn.count = count;
  syn.input_tokens = std::max<std::int64_t>(1, tokens);
  syn.output_tokens = output_tokens;
  syn.seed = o.load.seed * 1'000'003ull + salt;
  workload::RequestStream stream = workload::make_synthetic_stream(syn);
  engine_session::add_extra_body(stream, o.stream);  // sampling defaults: fill_sampling_defaults
  return stream;
}

std::uint64_t salt_of(const std::string& text) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

/// `figures` with the engine's side beside the client's (ladder, speed and real tables): when
/// responses carried the engine's timings, `server_prefill_tok_s` and `server_decode_tok_s`
/// (medians of its own rates), `cached_prompt_tokens` and `draft_acceptance_timings`; when its
/// /metrics counted drafts, `draft_acceptance_metrics`; always `tokens_per_event`. Named so
/// that none is read as a client figure.
json::object with_engine_figures(json::object figures, const engine_session::CellOutcome& c) {
  const engine::ServerTimingFigures& s = c.server_timings;
  if (s.with_timings > 0) {
    figures["server_prefill_tok_s"] = num(s.prefill_rate.p50);
    figures["server_decode_tok_s"] = num(s.decode_rate_per_user.p50);
    figures["cached_prompt_tokens"] =
        s.prompt_tokens_cached ? json::value(*s.prompt_tokens_cached) : json::value(nullptr);
    if (s.acceptance_rate) figures["draft_acceptance_timings"] = *s.acceptance_rate;
  }
  if (const std::optional<record::ServerSection> server =
          record::server_section_of(c.summary_file.server);
      server && server->spec_decode_acceptance_rate) {
    figures["draft_acceptance_metrics"] = *server->spec_decode_acceptance_rate;
  }
  figures["tokens_per_event"] = num(c.summary.tokens_per_event);
  return figures;
}

/// A cell whose every repetition is `spec`.
CellPlan same_cell(std::string name, json::object params, engine_session::CellSpec spec,
                   std::string metric = "") {
  return CellPlan{std::move(name), std::move(params), std::move(metric),
                  [spec = std::move(spec)](std::uint32_t) { return spec; }};
}

}  // namespace

load::CellLoad sweep_cell_load(const SweepOptions& s, double level) {
  load::CellLoad shape;
  if (s.rates) {
    shape.rate_per_s = level;
    shape.duration_s = s.rate_duration_s;
    shape.names = {"--rates", "--rate-duration", ""};
  } else {
    const auto c = static_cast<std::uint32_t>(level);
    shape.concurrency = c;
    // The declared concurrency is held only if every slot sends several requests.
    shape.requests = std::max<std::uint64_t>(s.min_requests, s.per_slot * c);
  }
  return shape;
}

std::uint64_t sweep_requests(const SweepOptions& s, const std::vector<double>& levels) {
  // (Rates count as levels too: an open-loop sweep's stream is as long as a closed one's.)
  std::uint64_t most = s.min_requests;
  for (double c : levels) most = std::max(most, static_cast<std::uint64_t>(c) * s.per_slot);
  return most;
}

ProtocolPlan plan_sweep(const SweepOptions& s, const std::vector<double>& levels, const Shared& o,
                        const workload::RequestStream& stream) {
  const bool open = s.rates.has_value();
  ProtocolPlan plan;
  plan.name = "sweep";
  plan.rep = s.rep;
  plan.primary = "output_tokens_per_s";
  plan.params = json::object{{"levels", open ? "rates" : "concurrencies"},
                             {"min_requests", s.min_requests},
                             {"per_slot", s.per_slot},
                             {"warmup", o.load.warmup},
                             {"request_stream_sha256", stream.sha256}};
  plan.params["values"] = to_array(levels);
  if (open) plan.params["rate_duration_s"] = s.rate_duration_s;
  plan.figures = protocol_figures(plan.name);
  // Synthetic prompts are about one token a word: the record says when the engine counted
  // otherwise (input_length_differs).
  const std::optional<std::int64_t> requested =
      o.stream.file ? std::nullopt : std::optional<std::int64_t>(o.stream.input_tokens);
  for (double level : levels) {
    const load::CellLoad shape = sweep_cell_load(s, level);
    engine_session::CellSpec spec = cell_over(stream.requests, stream.source, shape, o);
    spec.stream_sha256 = stream.sha256;
    spec.requested_input_tokens = requested;
    if (open) {
      // As many requests as arrive in the duration, cyclically (load::plan: cycles).
      plan.cells.push_back(
          same_cell("r" + number_text(level), json::object{{"rate_per_s", level}}, spec));
    } else {
      const auto c = static_cast<std::uint32_t>(level);
      const std::uint64_t count = *shape.requests;
      spec.stream_cycles = spec.load.warmup + count > stream.requests.size();  // a short --stream
      plan.cells.push_back(same_cell("c" + std::to_string(c),
                                     json::object{{"concurrency", c}, {"requests", count}}, spec));
    }
  }
  return plan;
}

namespace {

/// Computed prompt tokens: what the engine had to prefill (llama.cpp's timings.prompt_n, or
/// usage prompt − cached tokens), when every completed request says.
std::optional<double> computed_prompt_tokens(const engine_session::CellOutcome& c) {
  std::optional<double> computed;
  for (const auto& t : c.traces) {
    if (!t.measured() || !t.ok()) continue;
    const std::optional<std::int64_t> n = engine::computed_prompt_tokens(t);
    if (!n) return std::nullopt;
    computed = computed.value_or(0.0) + static_cast<double>(*n);
  }
  return computed;
}

}  // namespace

ProtocolPlan plan_ladder(const LadderOptions& l, const std::vector<double>& depths,
                         const std::vector<double>& sizes, const Shared& o, PromptCounter count,
                         const std::string& tokenizer, std::function<void()> after_count) {
  ProtocolPlan plan;
  plan.name = "ladder";
  plan.rep = l.rep;
  plan.primary = "decode_rate_p50";
  plan.params = json::object{{"depths", to_array(depths)},
                             {"prefill_sizes", to_array(sizes)},
                             {"decode_tokens", l.decode_tokens},
                             {"prefill_decode_tokens", l.prefill_decode_tokens},
                             {"prompt_lengths", count ? "exact" : "approximate"}};
  if (count) plan.params["tokenizer"] = tokenizer;
  plan.figures = protocol_figures(plan.name);
  // A repetition sends a prompt no earlier request sent, so a prefix cache cannot answer it
  // (the salt counts every prompt made, in the order the cells run).
  auto salt = std::make_shared<std::uint64_t>(0);
  const auto cell_for = [&o, count, after_count, salt](std::int64_t tokens,
                                                       std::int64_t max_tokens) {
    return [o, count, after_count, salt, tokens, max_tokens](std::uint32_t) {
      // --warmup N: N discarded requests of prompts of the same size, each one new, before
      // the measured one (so none of them is a prefix-cache hit for it).
      const std::uint64_t n = o.load.warmup + 1;
      workload::RequestStream stream;
      ++*salt;
      if (count && tokens > 0) {
        workload::ExactOptions eo;
        eo.api = o.api;
        eo.count = n;
        eo.input_tokens = tokens;
        eo.output_tokens = max_tokens;
        eo.seed = o.load.seed * 1'000'003ull + *salt;
        stream = workload::make_exact_stream(eo, count);
        engine_session::add_extra_body(stream, o.stream);
        if (after_count) after_count();  // the cell runs next: hold no idle connection
      } else {
        stream = synthetic(o, n, tokens, max_tokens, *salt);
      }
      const std::string given = stream.sha256;
      engine_session::fill_sampling_defaults(stream.requests, o.stream);
      engine_session::CellSpec spec =
          closed_cell(stream.requests, stream.source, 1, 1, o, o.load.warmup);
      spec.stream_sha256 = given;
      spec.sampling["max_tokens"] = max_tokens;
      if (max_tokens > 1) spec.sampling["ignore_eos"] = true;
      if (!count && tokens > 0) spec.requested_input_tokens = tokens;  // about one a word
      return spec;
    };
  };
  for (double depth : depths) {
    const auto tokens = static_cast<std::int64_t>(depth);
    plan.cells.push_back(CellPlan{
        "decode@" + std::to_string(tokens),
        json::object{
            {"kind", "decode"}, {"target_tokens", tokens}, {"output_tokens", l.decode_tokens}},
        "", cell_for(tokens, l.decode_tokens)});
    plan.cells.back().key = headline_key(plan.name, plan.cells.back().name);
  }
  for (double size : sizes) {
    const auto tokens = static_cast<std::int64_t>(size);
    // Its figure is its prefill rate however many tokens it decodes (a lab's pp0 rows decode
    // some): the selection metric stays prefill_rate_p50.
    plan.cells.push_back(CellPlan{"prefill@" + std::to_string(tokens),
                                  json::object{{"kind", "prefill"},
                                               {"target_tokens", tokens},
                                               {"output_tokens", l.prefill_decode_tokens}},
                                  "prefill_rate_p50", cell_for(tokens, l.prefill_decode_tokens)});
    plan.cells.back().key = headline_key(plan.name, plan.cells.back().name);
  }
  return plan;
}

namespace {

/// "fr2" → "fr": a pass named like an earlier one plus digits repeats its prompts (drift).
std::string base_name(const std::string& pass) {
  std::string b = pass;
  while (!b.empty() && std::isdigit(static_cast<unsigned char>(b.back()))) b.pop_back();
  return b.empty() ? pass : b;
}

std::vector<workload::Request> tagged(const workload::RequestStream& file,
                                      const std::string& pass) {
  std::vector<workload::Request> out;
  for (const auto& r : file.requests) {
    const auto it = r.tags.find("pass");
    if (it != r.tags.end() && it->second == pass) out.push_back(r);
  }
  return out;
}

json::object speed_figures(const engine_session::CellOutcome& c) {
  const auto& m = c.summary;
  const auto seconds = [](std::optional<double> ms) {
    return ms ? std::optional<double>(*ms / 1000.0) : std::nullopt;
  };
  if (m.requests_total <= 1) {  // solo: one streamed request
    std::optional<double> tok_s;
    if (m.e2e_ms.p50 && m.output_tokens.p50 && *m.e2e_ms.p50 > 0) {
      tok_s = *m.output_tokens.p50 / (*m.e2e_ms.p50 / 1000.0);
    }
    return json::object{{"ttft_ms", num(m.ttft_ms.p50)},
                        {"tok_s", num(tok_s)},
                        {"wall_s", num(seconds(m.e2e_ms.p50))},
                        {"output_tokens", m.output_tokens_total},
                        {"ok", m.requests_ok}};
  }
  return json::object{{"tok_s", num(m.output_tokens_per_s)},
                      {"wall_s", num(m.service_window_s)},
                      {"p50_latency_s", num(seconds(m.e2e_ms.p50))},
                      {"output_tokens", m.output_tokens_total},
                      {"ok", m.requests_ok}};
}

}  // namespace

ProtocolPlan plan_speed(const SpeedOptions& sp, const std::vector<std::string>& passes,
                        const Shared& o, const std::optional<workload::RequestStream>& file) {
  // Prompts of each pass: stream requests tagged pass=<name>; a pass "fr2" with no requests of
  // its own repeats pass "fr" (the session's drift). Without --stream: synthetic prompts
  // seeded by the pass's base name.
  std::map<std::string, std::vector<workload::Request>> prompts;
  for (const auto& pass : passes) {
    std::vector<workload::Request> reqs;
    if (file) {
      reqs = tagged(*file, pass);
      if (reqs.empty()) reqs = tagged(*file, base_name(pass));
      if (reqs.empty()) {
        throw UsageError("--passes: no request of " + o.stream.file.value_or("--stream") +
                         " is tagged pass=" + pass + " (or pass=" + base_name(pass) + ")");
      }
    } else {
      reqs = synthetic(o, sp.concurrency, o.stream.input_tokens, o.stream.output_tokens,
                       salt_of(base_name(pass)))
                 .requests;
    }
    prompts[pass] = std::move(reqs);
  }
  ProtocolPlan plan;
  plan.name = "speed";
  plan.rep = sp.rep;
  plan.primary = "output_tokens_per_s";
  json::array pl;
  for (const auto& p : passes) pl.push_back(json::value(p));
  plan.params = json::object{{"passes", pl},
                             {"burst", sp.concurrency},
                             {"warmup_requests", std::max<std::uint64_t>(1, o.load.warmup)}};
  const std::optional<std::int64_t> requested =
      file ? std::nullopt : std::optional<std::int64_t>(o.stream.input_tokens);
  plan.figures = protocol_figures(plan.name);
  bool first = true;
  for (const auto& pass : passes) {
    const auto& reqs = prompts[pass];
    // Solo: one streamed request; the session's warm-up (--warmup requests, at least one)
    // goes before the first.
    const std::uint64_t warmup = first ? std::max<std::uint64_t>(1, o.load.warmup) : 0;
    engine_session::CellSpec solo =
        given_cell(with_warmup({reqs.front()}, warmup), "pass:" + pass, 1, 1, o, warmup);
    solo.requested_input_tokens = requested;
    plan.cells.push_back(
        same_cell(pass + "/solo", json::object{{"pass", pass}, {"part", "solo"}}, solo));
    plan.cells.back().key = headline_key(plan.name, plan.cells.back().name);
    first = false;
    std::vector<workload::Request> burst;
    for (std::uint32_t i = 0; i < sp.concurrency; ++i) burst.push_back(reqs[i % reqs.size()]);
    engine_session::CellSpec agg =
        given_cell(burst, "pass:" + pass, sp.concurrency, sp.concurrency, o);
    agg.requested_input_tokens = requested;
    agg.stream_cycles = sp.concurrency > reqs.size();  // the burst repeats the pass's prompts
    plan.cells.push_back(same_cell(
        pass + "/agg",
        json::object{{"pass", pass}, {"part", "aggregate"}, {"concurrency", sp.concurrency}}, agg));
    plan.cells.back().key = headline_key(plan.name, plan.cells.back().name);
  }
  return plan;
}

ProtocolPlan plan_real(const RealOptions& re, const Shared& o,
                       const workload::RequestStream& stream) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<workload::Request>> cases;
  for (const auto& r : stream.requests) {
    const auto it = r.tags.find("case");
    const std::string name = it != r.tags.end() ? it->second : r.id;
    if (cases.find(name) == cases.end()) order.push_back(name);
    cases[name].push_back(r);
  }
  ProtocolPlan plan;
  plan.name = "real";
  plan.rep = re.rep;
  plan.primary = "decode_rate_p50";
  plan.params = json::object{{"cases", order.size()}, {"request_stream_sha256", stream.sha256}};
  plan.figures = protocol_figures(plan.name);
  // --warmup N: N discarded requests (the first case's first prompt, 8 tokens each) before
  // the first case.
  bool first = true;
  for (const auto& name : order) {
    const auto& reqs = cases[name];
    const std::uint64_t warmup = first ? o.load.warmup : 0;
    first = false;
    plan.cells.push_back(
        same_cell(name, json::object{{"case", name}, {"requests", reqs.size()}},
                  given_cell(with_warmup(reqs, warmup), stream.source, 1, reqs.size(), o, warmup)));
  }
  return plan;
}

Figures protocol_figures(const std::string& protocol) {
  if (protocol == "sweep") {
    return [](const engine_session::CellOutcome& c) {
      const auto& m = c.summary;
      return json::object{{"requests_ok", m.requests_ok},
                          {"achieved_concurrency", num(m.achieved_concurrency)},
                          {"output_tokens_per_s", num(m.output_tokens_per_s)},
                          {"requests_per_s", num(m.requests_per_s)},
                          {"ttft_p50_ms", num(m.ttft_ms.p50)},
                          {"ttft_p99_ms", num(m.ttft_ms.p99)},
                          {"tpot_p50_ms", num(m.tpot_ms.p50)},
                          {"e2e_p50_ms", num(m.e2e_ms.p50)},
                          {"error_rate", num(m.error_rate)}};
    };
  }
  if (protocol == "capacity") {
    // A sweep cell's figures and the tails the objectives are usually set on.
    return [sweep = protocol_figures("sweep")](const engine_session::CellOutcome& c) {
      const auto& m = c.summary;
      json::object f = sweep(c);
      f["ttft_p90_ms"] = num(m.ttft_ms.p90);
      f["tpot_p90_ms"] = num(m.tpot_ms.p90);
      f["e2e_p90_ms"] = num(m.e2e_ms.p90);
      f["goodput_requests_per_s"] = num(m.goodput_requests_per_s);
      return f;
    };
  }
  if (protocol == "ladder") {
    return [](const engine_session::CellOutcome& c) {
      const auto& m = c.summary;
      return with_engine_figures(
          json::object{{"input_tokens", num(m.input_tokens.p50)},
                       {"computed_prompt_tokens", num(computed_prompt_tokens(c))},
                       {"ttft_ms", num(m.ttft_ms.p50)},
                       {"prefill_tok_s", num(m.prefill_rate_client.p50)},
                       {"decode_tok_s", num(m.decode_rate_per_user.p50)}},
          c);
    };
  }
  if (protocol == "speed") {
    return [](const engine_session::CellOutcome& c) {
      return with_engine_figures(speed_figures(c), c);
    };
  }
  if (protocol == "real") {
    return [](const engine_session::CellOutcome& c) {
      const auto& m = c.summary;
      return with_engine_figures(
          json::object{{"input_tokens", num(m.input_tokens.p50)},
                       {"output_tokens", num(m.output_tokens.p50)},
                       {"ttft_ms", num(m.ttft_ms.p50)},
                       {"decode_tok_s", num(m.decode_rate_per_user.p50)},
                       {"e2e_s", num(m.e2e_ms.p50 ? std::optional<double>(*m.e2e_ms.p50 / 1000.0)
                                                  : std::nullopt)}},
          c);
    };
  }
  return {};
}

std::vector<std::string> headline_key(const std::string& protocol, const std::string& cell) {
  // speed: "<pass>/solo" and "<pass>/agg"; ladder: "<kind>@<tokens>".
  const char sep = protocol == "speed" ? '/' : protocol == "ladder" ? '@' : '\0';
  const std::size_t at = sep == '\0' ? std::string::npos : cell.rfind(sep);
  if (at == std::string::npos) return {cell};
  return {cell.substr(0, at), cell.substr(at + 1)};
}

}  // namespace dyno::protocol
