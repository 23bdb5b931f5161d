#include "app/protocols.h"

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cmath>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>

#include "app/campaign.h"
#include "app/console.h"
#include "app/flag_values.h"
#include "app/run_cell.h"
#include "app/run_limits.h"
#include "app/signals.h"
#include "engine/server_timings.h"
#include "record/record_json.h"
#include "record/redact.h"
#include "record/run_id.h"
#include "record/run_writer.h"
#include "workload/exact_prompt.h"
#include "workload/request_stream.h"
#include "workload/synthetic.h"

namespace dyno::app {

namespace json = boost::json;

namespace {

/// A comma-separated list, each value checked as a flag's value is (app/flag_values.h).
template <class Parse>
std::vector<double> parse_list(const std::string& text, const std::string& flag, Parse parse) {
  std::vector<double> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    try {
      out.push_back(static_cast<double>(parse(item)));
    } catch (const flags::FlagValueError& e) {
      throw UsageError(flag + ": " + e.what() + "; write e.g. " + flag + " 1,2,4,8");
    }
  }
  if (out.empty()) throw UsageError(flag + ": give at least one value, e.g. " + flag + " 1,2,4");
  return out;
}

/// Whole numbers in [lo, hi], e.g. --concurrencies.
std::vector<double> parse_counts(const std::string& text, const std::string& flag, std::uint64_t lo,
                                 std::uint64_t hi) {
  return parse_list(text, flag,
                    [lo, hi](const std::string& v) { return flags::parse_integer(v, lo, hi); });
}

std::vector<std::string> parse_names(const std::string& text, const std::string& flag) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    if (std::find(out.begin(), out.end(), item) != out.end()) {
      throw UsageError(flag + ": '" + item + "' is named twice");
    }
    out.push_back(item);
  }
  if (out.empty()) throw UsageError(flag + ": give at least one name");
  return out;
}

std::string number_text(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

json::value num(std::optional<double> v) { return record::number_or_null(v); }

/// A closed-loop cell spec over `requests`.
CellSpec closed_cell(std::vector<workload::Request> requests, std::string source,
                     std::uint32_t concurrency, std::uint64_t count, const RunOptions& o) {
  CellSpec spec;
  spec.requests = std::move(requests);
  spec.stream_source = std::move(source);
  spec.load.concurrency = concurrency;
  spec.load.requests = count;
  spec.load.keep_event_times = !o.no_chunk_times;
  spec.load.keep_output_text = o.keep_outputs;
  spec.load_text = "closed loop, concurrency " + std::to_string(concurrency) + ", " +
                   std::to_string(count) + " requests";
  spec.sampling = json::object{{"temperature", o.temperature}};
  if (o.slo) {
    spec.slo = parse_slo(*o.slo);
    spec.slo_text = *o.slo;
  }
  return spec;
}

/// closed_cell over `requests` as a stream gave them: the cell's hash is theirs, taken before
/// the flags fill sampling defaults (as `dyno run`'s is).
CellSpec given_cell(std::vector<workload::Request> requests, std::string source,
                    std::uint32_t concurrency, std::uint64_t count, const RunOptions& o) {
  const std::string sha = workload::stream_sha256(requests);
  fill_sampling_defaults(requests, o);
  CellSpec spec = closed_cell(std::move(requests), std::move(source), concurrency, count, o);
  spec.stream_sha256 = sha;
  return spec;
}

/// `count` synthetic requests of about `tokens` prompt tokens each, distinct per `salt`.
workload::RequestStream synthetic(const RunOptions& o, workload::Api api, std::uint64_t count,
                                  std::int64_t tokens, std::int64_t output_tokens,
                                  std::uint64_t salt) {
  workload::SyntheticOptions syn;
  syn.api = api;
  syn.count = count;
  syn.input_tokens = std::max<std::int64_t>(1, tokens);
  syn.output_tokens = output_tokens;
  syn.seed = o.seed * 1'000'003ull + salt;
  return workload::make_synthetic_stream(syn);  // sampling defaults: fill_sampling_defaults
}

std::uint64_t salt_of(const std::string& text) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

int sweep_command(const RunOptions& o, const SweepOptions& s) {
  validate_common(o);
  set_close_context({o.telemetry, o.telemetry_period_ms});
  const workload::Api api = parse_api(o.api);
  const bool open = s.rates.has_value();
  const std::vector<double> levels =
      open ? parse_list(*s.rates, "--rates",
                        [](const std::string& v) {
                          return flags::parse_number(v, 0, flags::kMaxRate, true);
                        })
           : parse_counts(s.concurrencies, "--concurrencies", 1, flags::kMaxConcurrency);
  load::Arrival arrival = load::Arrival::kPoisson;
  try {
    arrival = load::parse_arrival(o.arrival);
  } catch (const std::invalid_argument&) {
    throw UsageError("--arrival: '" + o.arrival + "'; use poisson, constant or gamma");
  }
  std::uint64_t most = s.min_requests;
  const double top = *std::max_element(levels.begin(), levels.end());
  if (open) {
    if (top * s.rate_duration_s > flags::kMaxRequests) {
      throw UsageError("--rates " + number_text(top) + " for --rate-duration " +
                       number_text(s.rate_duration_s) + " s would schedule about " +
                       number_text(std::round(top * s.rate_duration_s)) +
                       " requests a cell, more than the limit of " +
                       std::to_string(flags::kMaxRequests) + "; lower the rate or the duration");
    }
    warn_open_loop_descriptors(top, o);
  } else {
    if (top * static_cast<double>(s.per_slot) > flags::kMaxRequests) {
      throw UsageError("--per-slot " + std::to_string(s.per_slot) + " x concurrency " +
                       number_text(top) + " asks for more than the limit of " +
                       std::to_string(flags::kMaxRequests) +
                       " requests a cell; lower --per-slot or --concurrencies");
    }
    check_descriptors(static_cast<std::uint64_t>(top), "--concurrencies " + number_text(top), o);
  }
  for (double c : levels) most = std::max(most, static_cast<std::uint64_t>(c) * s.per_slot);
  const workload::RequestStream stream = build_stream(o, api, o.warmup + most);
  EngineSession engine(o, api);
  json::object params{{"levels", open ? "rates" : "concurrencies"},
                      {"min_requests", s.min_requests},
                      {"per_slot", s.per_slot},
                      {"warmup", o.warmup},
                      {"request_stream_sha256", stream.sha256}};
  json::array lv;
  for (double c : levels) lv.push_back(c);
  params["values"] = std::move(lv);
  if (open) params["rate_duration_s"] = s.rate_duration_s;
  Campaign campaign(o, "sweep", 1, params, s.rep, "output_tokens_per_s", [](const CellOutcome& c) {
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
  });
  const auto& stop = install_stop_signals();
  for (double level : levels) {
    if (open) {
      CellSpec spec = closed_cell(stream.requests, stream.source, 1, 1, o);
      spec.stream_sha256 = stream.sha256;
      spec.stream_cycles = true;  // as many requests as arrive in the duration, cyclically
      load::ScheduleSpec sched;
      sched.arrival = arrival;
      sched.rate_per_s = level;
      sched.burstiness = o.burstiness;
      sched.seed = o.seed;
      spec.load.open_loop = true;
      spec.load.schedule = sched;
      spec.load.requests.reset();
      spec.load.duration_s = s.rate_duration_s;
      spec.load.warmup = o.warmup;
      spec.load_text = "open loop, " + number_text(level) + " req/s, " + o.arrival + ", " +
                       fmt(s.rate_duration_s, 1) + " s";
      campaign.run(engine, spec, "r" + number_text(level), json::object{{"rate_per_s", level}},
                   stop);
    } else {
      const auto c = static_cast<std::uint32_t>(level);
      // The declared concurrency is held only if every slot sends several requests.
      const std::uint64_t count = std::max<std::uint64_t>(s.min_requests, s.per_slot * c);
      CellSpec spec = closed_cell(stream.requests, stream.source, c, count, o);
      spec.stream_sha256 = stream.sha256;
      spec.stream_cycles = o.warmup + count > stream.requests.size();  // a short --stream
      spec.load.warmup = o.warmup;
      campaign.run(engine, spec, "c" + std::to_string(c),
                   json::object{{"concurrency", c}, {"requests", count}}, stop);
    }
  }
  return campaign.finish(engine);
}

int ladder_command(const RunOptions& o, const LadderOptions& l) {
  validate_common(o);
  set_close_context({o.telemetry, o.telemetry_period_ms});
  const workload::Api api = parse_api(o.api);
  const std::vector<double> depths = parse_counts(l.depths, "--depths", 0, flags::kMaxTokens);
  const std::vector<double> sizes =
      l.prefill_sizes.empty()
          ? std::vector<double>{}
          : parse_counts(l.prefill_sizes, "--prefill-sizes", 1, flags::kMaxTokens);
  EngineSession engine(o, api);
  std::optional<PromptCounter> counter;
  try {
    counter.emplace(engine, o.timeout_s.value_or(30.0));
    workload::Request probe;
    probe.id = "probe";
    if (api == workload::Api::kChat) {
      probe.messages = {{"user", "hello", {}}};
    } else {
      probe.prompt = "hello";
    }
    (*counter)(probe);
    counter->disconnect();
  } catch (const std::exception& e) {
    std::cerr << "dyno ladder: prompt lengths are approximate (about one token per word): "
              << e.what() << "\n";
    counter.reset();
  }
  json::array d;
  for (double x : depths) d.push_back(x);
  json::array p;
  for (double x : sizes) p.push_back(x);
  json::object params{{"depths", d},
                      {"prefill_sizes", p},
                      {"decode_tokens", l.decode_tokens},
                      {"prompt_lengths", counter ? "exact" : "approximate"}};
  if (counter) params["tokenizer"] = counter->flavor();
  Campaign campaign(o, "ladder", 1, params, l.rep, "decode_rate_p50", [](const CellOutcome& c) {
    const auto& m = c.summary;
    // Computed prompt tokens: what the engine had to prefill (llama.cpp's timings.prompt_n, or
    // usage prompt − cached tokens), when every completed request says.
    std::optional<double> computed;
    for (const auto& t : c.traces) {
      if (!t.measured() || !t.ok()) continue;
      const std::optional<std::int64_t> n = engine::computed_prompt_tokens(t);
      if (!n) {
        computed.reset();
        break;
      }
      computed = computed.value_or(0.0) + static_cast<double>(*n);
    }
    return json::object{{"input_tokens", num(m.input_tokens.p50)},
                        {"computed_prompt_tokens", num(computed)},
                        {"ttft_ms", num(m.ttft_ms.p50)},
                        {"prefill_tok_s", num(m.prefill_rate_client.p50)},
                        {"decode_tok_s", num(m.decode_rate_per_user.p50)}};
  });
  const auto& stop = install_stop_signals();
  // A repetition sends a prompt no earlier request sent, so a prefix cache cannot answer it.
  // Prompt lengths are exact (through the engine's /tokenize) when the engine has one.
  std::uint64_t salt = 0;
  const auto cell_for = [&](std::int64_t tokens, std::int64_t max_tokens) {
    return [&o, &counter, api, tokens, max_tokens, &salt](std::uint32_t) {
      workload::RequestStream stream;
      ++salt;
      if (counter && tokens > 0) {
        workload::ExactOptions eo;
        eo.api = api;
        eo.count = 1;
        eo.input_tokens = tokens;
        eo.output_tokens = max_tokens;
        eo.seed = o.seed * 1'000'003ull + salt;
        stream = workload::make_exact_stream(
            eo, [&counter](const workload::Request& r) { return (*counter)(r); });
        counter->disconnect();  // the cell runs next: hold no idle connection meanwhile
      } else {
        stream = synthetic(o, api, 1, tokens, max_tokens, salt);
      }
      const std::string given = stream.sha256;
      fill_sampling_defaults(stream.requests, o);
      CellSpec spec = closed_cell(stream.requests, stream.source, 1, 1, o);
      spec.stream_sha256 = given;
      spec.sampling["max_tokens"] = max_tokens;
      if (max_tokens > 1) spec.sampling["ignore_eos"] = true;
      return spec;
    };
  };
  for (double depth : depths) {
    const auto tokens = static_cast<std::int64_t>(depth);
    campaign.run(engine, cell_for(tokens, l.decode_tokens), "decode@" + std::to_string(tokens),
                 json::object{{"kind", "decode"}, {"target_tokens", tokens}}, stop);
  }
  for (double size : sizes) {
    const auto tokens = static_cast<std::int64_t>(size);
    campaign.run(engine, cell_for(tokens, 1), "prefill@" + std::to_string(tokens),
                 json::object{{"kind", "prefill"}, {"target_tokens", tokens}}, stop,
                 "prefill_rate_p50");
  }
  return campaign.finish(engine);
}

int speed_command(const RunOptions& o, const SpeedOptions& sp) {
  validate_common(o);
  set_close_context({o.telemetry, o.telemetry_period_ms});
  const workload::Api api = parse_api(o.api);
  const std::vector<std::string> passes = parse_names(sp.passes, "--passes");
  check_descriptors(sp.concurrency, "--burst " + std::to_string(sp.concurrency), o);
  // Prompts of each pass: stream requests tagged pass=<name>; a pass "fr2" with no requests of
  // its own repeats pass "fr" (the session's drift). Without --stream: synthetic prompts
  // seeded by the pass's base name.
  std::optional<workload::RequestStream> file;
  if (o.stream_file) file = stream_as_given(o, api, 0);
  const auto base_name = [](const std::string& pass) {
    std::string b = pass;
    while (!b.empty() && std::isdigit(static_cast<unsigned char>(b.back()))) b.pop_back();
    return b.empty() ? pass : b;
  };
  std::map<std::string, std::vector<workload::Request>> prompts;
  for (const auto& pass : passes) {
    std::vector<workload::Request> reqs;
    if (file) {
      for (const auto& r : file->requests) {
        const auto it = r.tags.find("pass");
        if (it != r.tags.end() && it->second == pass) reqs.push_back(r);
      }
      if (reqs.empty()) {
        for (const auto& r : file->requests) {
          const auto it = r.tags.find("pass");
          if (it != r.tags.end() && it->second == base_name(pass)) reqs.push_back(r);
        }
      }
      if (reqs.empty()) {
        throw UsageError("--passes: no request of " + *o.stream_file + " is tagged pass=" + pass +
                         " (or pass=" + base_name(pass) + ")");
      }
    } else {
      reqs = synthetic(o, api, sp.concurrency, o.input_tokens, o.output_tokens,
                       salt_of(base_name(pass)))
                 .requests;
    }
    prompts[pass] = std::move(reqs);
  }
  EngineSession engine(o, api);
  json::array pl;
  for (const auto& p : passes) pl.push_back(json::value(p));
  json::object params{{"passes", pl}, {"burst", sp.concurrency}, {"warmup_requests", 1}};
  Campaign campaign(o, "speed", 1, params, sp.rep, "output_tokens_per_s", [](const CellOutcome& c) {
    const auto& m = c.summary;
    if (m.requests_total <= 1) {  // solo: one streamed request
      std::optional<double> tok_s;
      if (m.e2e_ms.p50 && m.output_tokens.p50 && *m.e2e_ms.p50 > 0) {
        tok_s = *m.output_tokens.p50 / (*m.e2e_ms.p50 / 1000.0);
      }
      return json::object{
          {"ttft_ms", num(m.ttft_ms.p50)},
          {"tok_s", num(tok_s)},
          {"wall_s",
           num(m.e2e_ms.p50 ? std::optional<double>(*m.e2e_ms.p50 / 1000.0) : std::nullopt)},
          {"output_tokens", m.output_tokens_total},
          {"ok", m.requests_ok}};
    }
    return json::object{
        {"tok_s", num(m.output_tokens_per_s)},
        {"wall_s", num(m.service_window_s)},
        {"p50_latency_s",
         num(m.e2e_ms.p50 ? std::optional<double>(*m.e2e_ms.p50 / 1000.0) : std::nullopt)},
        {"output_tokens", m.output_tokens_total},
        {"ok", m.requests_ok}};
  });
  const auto& stop = install_stop_signals();
  bool first = true;
  for (const auto& pass : passes) {
    const auto& reqs = prompts[pass];
    // Solo: one streamed request; the session's one discarded warm-up goes before the first.
    std::vector<workload::Request> solo_reqs;
    std::uint64_t warmup = 0;
    if (first) {
      workload::Request w = reqs.front();
      w.id += "#warmup";
      w.sampling.max_tokens = 8;
      solo_reqs.push_back(std::move(w));
      warmup = 1;
    }
    solo_reqs.push_back(reqs.front());
    CellSpec solo = given_cell(solo_reqs, "pass:" + pass, 1, 1, o);
    solo.load.warmup = warmup;
    campaign.run(engine, solo, pass + "/solo", json::object{{"pass", pass}, {"part", "solo"}},
                 stop);
    first = false;
    std::vector<workload::Request> burst;
    for (std::uint32_t i = 0; i < sp.concurrency; ++i) burst.push_back(reqs[i % reqs.size()]);
    CellSpec agg = given_cell(burst, "pass:" + pass, sp.concurrency, sp.concurrency, o);
    agg.stream_cycles = sp.concurrency > reqs.size();  // the burst repeats the pass's prompts
    campaign.run(
        engine, agg, pass + "/agg",
        json::object{{"pass", pass}, {"part", "aggregate"}, {"concurrency", sp.concurrency}}, stop);
  }
  return campaign.finish(engine);
}

int real_command(const RunOptions& o, const RealOptions& re) {
  validate_common(o);
  set_close_context({o.telemetry, o.telemetry_period_ms});
  const workload::Api api = parse_api(o.api);
  if (!o.stream_file) {
    throw UsageError(
        "real needs --stream FILE: a prompt set whose requests are tagged case=<name>");
  }
  const workload::RequestStream stream = stream_as_given(o, api, 0);
  std::vector<std::string> order;
  std::map<std::string, std::vector<workload::Request>> cases;
  for (const auto& r : stream.requests) {
    const auto it = r.tags.find("case");
    const std::string name = it != r.tags.end() ? it->second : r.id;
    if (cases.find(name) == cases.end()) order.push_back(name);
    cases[name].push_back(r);
  }
  EngineSession engine(o, api);
  json::object params{{"cases", order.size()}, {"request_stream_sha256", stream.sha256}};
  Campaign campaign(o, "real", 1, params, re.rep, "decode_rate_p50", [](const CellOutcome& c) {
    const auto& m = c.summary;
    return json::object{{"input_tokens", num(m.input_tokens.p50)},
                        {"output_tokens", num(m.output_tokens.p50)},
                        {"ttft_ms", num(m.ttft_ms.p50)},
                        {"decode_tok_s", num(m.decode_rate_per_user.p50)},
                        {"e2e_s", num(m.e2e_ms.p50 ? std::optional<double>(*m.e2e_ms.p50 / 1000.0)
                                                   : std::nullopt)}};
  });
  const auto& stop = install_stop_signals();
  for (const auto& name : order) {
    const auto& reqs = cases[name];
    CellSpec spec = given_cell(reqs, stream.source, 1, reqs.size(), o);
    campaign.run(engine, spec, name, json::object{{"case", name}, {"requests", reqs.size()}}, stop);
  }
  return campaign.finish(engine);
}

}  // namespace dyno::app
