#include "app/protocols.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <iostream>
#include <sstream>

#include "app/cell_report.h"
#include "app/console.h"
#include "app/flag_values.h"
#include "app/signals.h"
#include "engine_session/cell_plan.h"
#include "engine_session/host_identity.h"
#include "engine_session/run_limits.h"
#include "engine_session/stream.h"
#include "json/utf8.h"
#include "load/plan.h"
#include "protocol/campaign.h"
#include "record/campaign_file.h"
#include "record/record_json.h"
#include "record/run_writer.h"
#include "record/signature.h"
#include "scrub/redact.h"
#include "scrub/scrub.h"

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

/// A text the user declares of a campaign: 1 to `max` bytes of well-formed UTF-8 without a
/// control character (it is shown on terminals and boards as written).
void check_declared_text(const std::string& flag, const std::string& v, std::size_t max) {
  const auto bad = [&](const std::string& why) {
    throw UsageError(flag + ": " + why + "; give 1 to " + std::to_string(max) +
                     " bytes of printable text");
  };
  if (v.empty()) bad("an empty value");
  if (v.size() > max) bad(std::to_string(v.size()) + " bytes is too long");
  if (!utf8::is_valid(v)) bad("not well-formed UTF-8");
  for (const char c : v) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) bad("a control character");
  }
}

/// What the user declares of a campaign, checked before the engine starts (exit 2 naming the
/// flag). The name is used where a file name or a terminal column may hold it: letters, digits,
/// '.', '_' and '-', starting with a letter or digit.
void check_declared(const protocol::CampaignDeclared& d) {
  if (d.name) {
    const std::string& n = *d.name;
    const bool ok =
        !n.empty() && n.size() <= 64 && std::isalnum(static_cast<unsigned char>(n[0])) &&
        std::all_of(n.begin(), n.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
        });
    if (!ok) {
      throw UsageError("--campaign-name: '" + terminal_text(n, true) +
                       "' is not a name; use 1 to 64 letters, digits, '.', '_' or '-', "
                       "starting with a letter or digit (e.g. 2026-10-03-speed-en)");
    }
  }
  if (d.notes.size() > 100) throw UsageError("--notes: at most 100 notes");
  for (const auto& n : d.notes) check_declared_text("--notes", n, 4000);
  if (d.status) check_declared_text("--campaign-status", *d.status, 200);
  if (d.hardware_label) check_declared_text("--hardware-label", *d.hardware_label, 200);
  if (d.evidence.size() > 1000) throw UsageError("--evidence: at most 1000 items");
  for (const auto& e : d.evidence) check_declared_text("--evidence", e, 4096);
}

}  // namespace

/// What every protocol checks first: the shared flags, what the user declares of the
/// campaign, the close context, the API.
protocol::Shared shared_flags(const RunOptions& o, const protocol::CampaignDeclared& declared) {
  check_declared(declared);
  engine_session::validate_target(o.target, o.telemetry);
  set_close_context({o.telemetry.mode, o.telemetry.period_ms});
  protocol::Shared shared;
  shared.api = engine_session::parse_api(o.target.api);
  shared.load = o.load;
  shared.stream = o.stream;
  shared.record = o.record;
  // Checked before the engine starts, as each cell applies them (load::plan,
  // engine_session::cell_from_flags).
  (void)load::plan(o.load);
  (void)engine_session::checked_extra_body(o.stream, shared.api, !o.target.no_stream);
  return shared;
}

engine_session::EngineSession make_engine(const RunOptions& o, workload::Api api) {
  return engine_session::EngineSession(o.target, o.telemetry, o.load.seed, api,
                                       install_stop_signals());
}

namespace {

/// One row per cell, one column per figure: the selected repetition's value (a run's own
/// figures, never a blend of runs).
void print_table(const protocol::ProtocolCampaign& campaign, const protocol::ProtocolPlan& plan,
                 const json::object& doc, const std::filesystem::path& file) {
  const std::string metric(doc.at("selection").at("metric").as_string());
  std::cout << "dyno " << plan.name << " · campaign " << campaign.id() << " · "
            << std::string(doc.at("status").as_string()) << " · selection: median of "
            << plan.rep.repeat << " by " << metric;
  if (plan.rep.repeat > 1) std::cout << " (figures: the selected repetition's)";
  std::cout << "\n";
  const std::vector<std::string> columns = campaign.columns();
  std::size_t name_width = 4;
  for (const auto& cv : doc.at("cells").as_array()) {
    name_width = std::max(name_width, cv.at("cell").as_string().size());
  }
  std::ostringstream line;
  line << "  " << std::string(name_width, ' ');
  for (const auto& col : columns)
    line << "  " << std::string(std::max<std::size_t>(col.size(), 9) - col.size(), ' ') << col;
  std::cout << line.str() << "\n";
  for (const auto& cv : doc.at("cells").as_array()) {
    const auto& c = cv.as_object();
    const std::string name(c.at("cell").as_string());
    std::ostringstream row;
    row << "  " << name << std::string(name_width - name.size(), ' ');
    const auto& figs = c.at("figures").as_object();
    for (const auto& col : columns) {
      std::string text = "n/a";
      if (const auto* sp = figs.if_contains(col); sp != nullptr) {
        const auto& value = sp->as_object().at("selected");
        if (!value.is_null()) text = fmt(value.to_number<double>(), 2);
      }
      const std::size_t width = std::max<std::size_t>(col.size(), 9);
      row << "  " << std::string(width - std::min(text.size(), width), ' ') << text;
    }
    std::cout << row.str() << "\n";
  }
  std::cout << "campaign file " << file.string() << "\n";
}

}  // namespace

std::filesystem::path write_campaign_file(json::object& doc, const RunOptions& o,
                                          const engine_session::EngineSession& engine,
                                          const std::string& campaign_id) {
  const std::filesystem::path dir = std::filesystem::path(o.record.runs_root) / "campaigns";
  std::filesystem::create_directories(dir);
  const std::filesystem::path file = dir / (campaign_id + ".json");
  // engine.reported holds what the server answered: never the key, even if it echoed it.
  if (const auto& key = engine.target_config().api_key) scrub::redact_literals(doc, {*key});
  {  // what every record's JSON goes through (RunWriter): notes and evidence are the user's text
    json::value v = std::move(doc);
    (void)scrub::redact_secrets(v);
    doc = std::move(v.as_object());
  }
  const std::string text = record::signed_campaign_text(doc);  // what runs verify checks
  record::write_file_atomic(file, text);
  if (o.record.signing_key) record::sign_campaign_file(file, *o.record.signing_key);
  doc[record::kCampaignDigestKey] = record::campaign_digests(text)->recorded;
  return file;
}

json::object campaign_document(const protocol::ProtocolCampaign& campaign,
                               engine_session::EngineSession& engine) {
  return campaign.document(engine.engine_json(), engine.model(),
                           telemetry::vram_snapshot_json(engine.vram_after_load()),
                           engine_session::hardware_identity(engine.monitor()).label.value_or(""));
}

int campaign_exit_code(const std::string& status) {
  if (status == "ok") return kExitOk;
  return status == "interrupted" ? kExitInterrupted : kExitRunFailed;
}

namespace {

/// Runs `plan` against `engine` as a campaign, writes its file and prints its table (or JSON);
/// returns the exit code.
int run_campaign(engine_session::EngineSession& engine, const protocol::ProtocolPlan& plan,
                 const RunOptions& o, const protocol::CampaignDeclared& declared) {
  protocol::ProtocolCampaign campaign(plan, o.record.label, declared);
  const std::atomic<bool>& stop = install_stop_signals();
  std::set<metrics::WarningCode> shown;
  campaign.run(
      [&](const engine_session::CellSpec& spec) {
        return run_and_show(engine, spec, o, stop, /*print_summary=*/false, &shown);
      },
      [](const std::string& line) { std::cerr << line << "\n"; });
  json::object doc = campaign_document(campaign, engine);
  const std::filesystem::path file = write_campaign_file(doc, o, engine, campaign.id());
  if (o.console.json) {
    doc["campaign_file"] = file.string();
    std::cout << record::pretty_json(doc);
  } else {
    print_table(campaign, plan, doc, file);
  }
  return campaign_exit_code(campaign.status());
}

}  // namespace

int sweep_command(const RunOptions& o, const SweepOptions& s) {
  const protocol::Shared shared = shared_flags(o, s.declared);
  const bool open = s.rates.has_value();
  const std::vector<double> levels =
      open ? parse_list(*s.rates, "--rates",
                        [](const std::string& v) {
                          return flags::parse_number(v, flags::kMinRate, flags::kMaxRate);
                        })
           : parse_counts(s.concurrencies, "--concurrencies", 1, flags::kMaxConcurrency);
  // Every cell's load planned before anything is built (an open loop's schedule bounded).
  for (double level : levels) (void)load::plan(o.load, protocol::sweep_cell_load(s, level));
  const double top = *std::max_element(levels.begin(), levels.end());
  if (open) {
    engine_session::warn_open_loop_descriptors(top, o.target);
  } else {
    if (top * static_cast<double>(s.per_slot) > flags::kMaxRequests) {
      throw UsageError("--per-slot " + std::to_string(s.per_slot) + " x concurrency " +
                       number_text(top) + " asks for more than the limit of " +
                       std::to_string(flags::kMaxRequests) +
                       " requests a cell; lower --per-slot or --concurrencies");
    }
    engine_session::check_descriptors(static_cast<std::uint64_t>(top),
                                      "--concurrencies " + number_text(top), o.target);
  }
  const workload::RequestStream stream = engine_session::build_stream(
      o.stream, shared.api, o.load.seed, o.load.warmup + protocol::sweep_requests(s, levels));
  engine_session::EngineSession engine = make_engine(o, shared.api);
  return run_campaign(engine, protocol::plan_sweep(s, levels, shared, stream), o, s.declared);
}

int ladder_command(const RunOptions& o, const LadderOptions& l) {
  const protocol::Shared shared = shared_flags(o, l.declared);
  const std::vector<double> depths = parse_counts(l.depths, "--depths", 0, flags::kMaxTokens);
  const std::vector<double> sizes =
      l.prefill_sizes.empty()
          ? std::vector<double>{}
          : parse_counts(l.prefill_sizes, "--prefill-sizes", 1, flags::kMaxTokens);
  engine_session::EngineSession engine = make_engine(o, shared.api);
  // Prompt lengths are exact (through the engine's /tokenize) when the engine has one.
  std::optional<engine_session::PromptCounter> counter;
  try {
    counter.emplace(engine, o.target.timeout_s.value_or(30.0));
    workload::Request probe;
    probe.id = "probe";
    if (shared.api == workload::Api::kChat) {
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
  protocol::PromptCounter count;
  std::string tokenizer;
  if (counter) {
    count = [&counter](const workload::Request& r) { return (*counter)(r); };
    tokenizer = counter->flavor();
  }
  const protocol::ProtocolPlan plan = protocol::plan_ladder(
      l, depths, sizes, shared, count, tokenizer, [&counter] { counter->disconnect(); });
  return run_campaign(engine, plan, o, l.declared);
}

int speed_command(const RunOptions& o, const SpeedOptions& sp) {
  const protocol::Shared shared = shared_flags(o, sp.declared);
  const std::vector<std::string> passes = parse_names(sp.passes, "--passes");
  engine_session::check_descriptors(sp.concurrency, "--burst " + std::to_string(sp.concurrency),
                                    o.target);
  std::optional<workload::RequestStream> file;
  if (o.stream.file) file = engine_session::stream_as_given(o.stream, shared.api, o.load.seed, 0);
  const protocol::ProtocolPlan plan = protocol::plan_speed(sp, passes, shared, file);
  engine_session::EngineSession engine = make_engine(o, shared.api);
  return run_campaign(engine, plan, o, sp.declared);
}

int real_command(const RunOptions& o, const RealOptions& re) {
  const protocol::Shared shared = shared_flags(o, re.declared);
  if (!o.stream.file) {
    throw UsageError(
        "real needs --stream FILE: a prompt set whose requests are tagged case=<name>");
  }
  const workload::RequestStream stream =
      engine_session::stream_as_given(o.stream, shared.api, o.load.seed, 0);
  engine_session::EngineSession engine = make_engine(o, shared.api);
  return run_campaign(engine, protocol::plan_real(re, shared, stream), o, re.declared);
}

}  // namespace dyno::app
