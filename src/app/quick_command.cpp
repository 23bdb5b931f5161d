// `dyno quick`: discovery, the one-user cell, the short capacity search and the answer
// (quick_command.h). The measuring is the other commands': the one-user cell is `dyno run`'s
// (run_one_cell), the search is `dyno capacity`'s (capacity_command); this file only picks the
// target and their settings, and speaks for them.
#include "app/quick_command.h"

#include <CLI/CLI.hpp>
#include <boost/json.hpp>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "app/capacity_command.h"
#include "app/exit_codes.h"
#include "app/flag_values.h"
#include "app/measure_flags.h"
#include "app/run_command.h"
#include "engine/launch.h"
#include "engine_session/engine_session.h"
#include "scrub/terminal_text.h"
#include "transport/base_url.h"
#include "transport/tokenize_client.h"

namespace dyno::app {

namespace json = boost::json;

namespace {

/// The most ports DYNO_QUICK_PORTS may list (each a probe of up to kProbeTimeout).
constexpr std::size_t kMaxQuickPorts = 16;
/// A probe of a usual port: loopback answers in well under a millisecond, so 300 ms only bounds
/// a port held by something that accepts and never answers.
constexpr std::chrono::milliseconds kProbeTimeout{300};
/// A probe of a server the user named with --url (it may be remote, or busy).
constexpr std::chrono::milliseconds kUrlTimeout{5000};

/// What a GET /v1/models at `url` answered: the list, or why there is none (`why`).
/// The transport module's blocking client (TokenizeClient::call) is the small one-off HTTP
/// client dyno already has for calls before a run: one timeout bounds the connect and each
/// step of the call, which is all a probe needs; the run's client (HttpTarget) is an event-loop
/// pool for measured requests, the wrong tool for one GET.
std::optional<ModelList> probe_models(const transport::BaseUrl& url,
                                      std::chrono::milliseconds timeout,
                                      const std::optional<std::string>& api_key, std::string& why) {
  transport::TokenizeClientOptions co;
  co.timeout = timeout;
  transport::TokenizeClient::HttpReply reply;
  try {
    transport::TokenizeClient client(url, "", api_key, co);
    reply = client.call("GET", "/v1/models");
  } catch (const Error& e) {
    why = e.what();
    return std::nullopt;
  }
  if (reply.status != 200) {
    why =
        "GET /v1/models answered HTTP " + std::to_string(reply.status) +
        (reply.status == 401 || reply.status == 403 ? " (set DYNO_API_KEY or OPENAI_API_KEY)" : "");
    return std::nullopt;
  }
  std::optional<ModelList> list = read_model_list(reply.body);
  if (!list) why = "GET /v1/models did not answer an OpenAI model list";
  return list;
}

/// A server discovery found (or --url named).
struct Found {
  transport::BaseUrl url;
  std::string owner;  ///< the port's usual owner ("" for --url or a port of DYNO_QUICK_PORTS)
  ModelList models;
};

std::string ports_text(const std::vector<UsualPort>& ports) {
  std::string out;
  for (const UsualPort& p : ports) {
    if (!out.empty()) out += ", ";
    out += std::to_string(p.port);
    if (!p.owner.empty()) out += " (" + std::string(p.owner) + ")";
  }
  return out;
}

/// The one server answering /v1/models on the loopback ports; UsageError when none or several
/// answer.
Found discover(const std::vector<UsualPort>& ports, const std::optional<std::string>& api_key,
               std::ostream& err, bool quiet) {
  std::vector<Found> found;
  for (const UsualPort& p : ports) {
    const transport::BaseUrl url =
        transport::BaseUrl::parse("http://127.0.0.1:" + std::to_string(p.port) + "/v1");
    std::string why;
    if (std::optional<ModelList> models = probe_models(url, kProbeTimeout, api_key, why)) {
      found.push_back(Found{url, std::string(p.owner), std::move(*models)});
    }
  }
  if (found.empty()) {
    throw UsageError(
        "no local server found: nothing on 127.0.0.1 answered GET /v1/models on "
        "ports " +
        ports_text(ports) +
        "; start one, or name it with --url http://HOST:PORT/v1 (dyno quick probes "
        "nothing but this machine's loopback unless given --url)");
  }
  if (found.size() > 1) {
    std::string list;
    for (const Found& f : found) list += "\n  --url " + f.url.to_string();
    throw UsageError("several local servers answer GET /v1/models; name the one to measure:" +
                     list);
  }
  if (!quiet) {
    err << "dyno quick: found a server at " << found[0].url.authority()
        << (found[0].owner.empty() ? std::string() : ", the usual port of " + found[0].owner)
        << " (tried " << ports_text(ports) << ")\n";
  }
  return std::move(found[0]);
}

/// Who the server is, in words: what it says of itself (the identity probe every record uses),
/// else its /v1/models owner, else the port's usual owner.
std::string who(const Found& f, const std::optional<std::string>& api_key) {
  const json::object identity =
      engine::query_engine_identity(f.url.to_string(), engine::known_identity_paths(), api_key);
  if (const json::value* name = identity.if_contains("name"); name && name->is_string()) {
    return engine_display_name(std::string(name->as_string()));
  }
  if (f.models.owned_by) return engine_display_name(*f.models.owned_by);
  if (!f.owner.empty()) return "a server on " + f.owner + "'s usual port";
  return "the server";
}

std::optional<double> p50(const metrics::Distribution& d) { return d.p50; }

/// The search's own sentence (capacity_command always writes one), as a sentence of the answer:
/// "capacity 4 users: …" becomes "Capacity 4 users: ….".
std::string capacity_words(const CapacityResult& r) {
  std::string s = r.sentence;
  if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return s + ".";
}

}  // namespace

std::vector<UsualPort> usual_ports() {
  return {{11434, "Ollama"}, {8080, "llama.cpp or TGI"}, {1234, "LM Studio"},
          {8000, "vLLM"},    {30000, "SGLang"},          {3000, "TGI"}};
}

std::vector<UsualPort> quick_ports(const char* env_value) {
  if (env_value == nullptr) return usual_ports();
  const std::vector<UsualPort> usual = usual_ports();
  std::vector<UsualPort> out;
  std::string text(env_value);
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? comma : comma - start);
    const auto port = static_cast<std::uint16_t>(about("DYNO_QUICK_PORTS", [&] {
      if (item.empty()) throw UsageError("an empty item in \"" + text + "\" (expected 8080,9000)");
      return flags::parse_integer(item, 1, 65535);
    }));
    std::string_view owner;
    for (const UsualPort& u : usual) owner = u.port == port ? u.owner : owner;
    out.push_back({port, owner});
    if (out.size() > kMaxQuickPorts) {
      throw UsageError("DYNO_QUICK_PORTS: more than " + std::to_string(kMaxQuickPorts) + " ports");
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::optional<ModelList> read_model_list(std::string_view body) {
  boost::system::error_code ec;
  const json::value v = json::parse(body, ec);
  if (ec || !v.is_object()) return std::nullopt;
  const json::value* data = v.as_object().if_contains("data");
  if (data == nullptr || !data->is_array()) return std::nullopt;
  ModelList out;
  for (const json::value& entry : data->as_array()) {
    if (!entry.is_object()) return std::nullopt;
    const json::value* id = entry.as_object().if_contains("id");
    if (id == nullptr || !id->is_string()) return std::nullopt;
    out.ids.emplace_back(id->as_string());
    const json::value* owner = entry.as_object().if_contains("owned_by");
    if (out.ids.size() == 1 && owner != nullptr && owner->is_string()) {
      out.owned_by = std::string(owner->as_string());
    }
  }
  return out;
}

std::string pick_model(const ModelList& models, const std::optional<std::string>& given,
                       const std::string& where) {
  if (given) return *given;
  if (models.ids.size() == 1) return models.ids[0];
  if (models.ids.empty()) {
    throw UsageError(where + " lists no model on GET /v1/models; name one with --model");
  }
  std::string list;
  for (const std::string& id : models.ids) list += "\n  --model " + scrub::terminal_text(id, true);
  throw UsageError(where + " serves " + std::to_string(models.ids.size()) +
                   " models; name the one to measure:" + list);
}

std::string engine_display_name(std::string_view name) {
  static constexpr std::pair<std::string_view, std::string_view> kNames[] = {
      {"llamacpp", "llama.cpp"}, {"llama.cpp", "llama.cpp"}, {"vllm", "vLLM"},
      {"sglang", "SGLang"},      {"ollama", "Ollama"},       {"text-generation-inference", "TGI"},
      {"dyno-sim", "dyno sim"},
  };
  for (const auto& [from, to] : kNames) {
    if (name == from) return std::string(to);
  }
  return scrub::terminal_text(std::string(name), true);
}

std::string three_digits(double x) {
  if (!std::isfinite(x)) return "?";
  const double a = std::fabs(x);
  const int decimals = a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
  return buf;
}

int quick_command(const QuickOptions& q, std::ostream& out, std::ostream& err) {
  const std::optional<std::string> api_key = engine_session::api_key_from_env();
  Found target;
  if (q.url) {
    const transport::BaseUrl url =
        about("--url", [&] { return transport::BaseUrl::parse(*q.url); });
    std::string why;
    std::optional<ModelList> models = probe_models(url, kUrlTimeout, api_key, why);
    if (!models && !q.model) {
      throw UsageError("--url " + url.to_string() + ": " + why +
                       "; name the model to measure with --model");
    }
    target = Found{url, "", models.value_or(ModelList{})};
  } else {
    target = discover(quick_ports(std::getenv("DYNO_QUICK_PORTS")), api_key, err, q.quiet);
  }
  const std::string where = target.url.authority();
  const std::string model = pick_model(target.models, q.model, where);
  const std::string name = who(target, api_key);
  const std::string head =
      name + " at " + where + " (model " + scrub::terminal_text(model, true) + ")";
  if (!q.quiet) err << "dyno quick: " << head << ": measuring one user\n";

  RunOptions base;
  base.target.url = target.url.to_string();
  base.target.model = model;
  base.target.api = q.api;
  base.stream.output_tokens = q.output_tokens;
  base.record.runs_root = q.runs_root;
  base.record.label = "quick";
  base.console.quiet = q.quiet;

  // One user: a closed loop at C=1, one warm-up request (a first request may load the model).
  RunOptions one = base;
  one.load.concurrency = 1;
  one.load.requests = q.one_user_requests;
  one.load.warmup = 1;
  const engine_session::CellOutcome user = run_one_cell(start_measuring(one), false);
  if (user.exit_code != kExitOk) {
    err << "dyno quick: the one-user cell did not finish well (" << user.status
        << "); its record: " << user.dir.string() << "\n";
    return user.exit_code;
  }
  const std::optional<double> ttft = p50(user.summary.ttft_ms);
  const std::optional<double> rate = p50(user.summary.decode_rate_per_user);

  // The short search: small probes (a probe sends max(8, 2·C) requests), at most max_users.
  if (!q.quiet) err << "dyno quick: searching the capacity (at most " << q.max_users << " users)\n";
  RunOptions search = base;
  search.load.slo = q.slo;
  CapacityOptions c;
  c.by = "concurrency";
  c.min = 1;
  c.max = q.max_users;
  c.min_requests = 8;
  c.per_slot = 2;
  c.repeat_boundary = 2;
  c.print = false;
  CapacityResult result;
  const int code = capacity_command(start_measuring(search), c, &result);

  std::ostringstream answer;
  answer << head << ": one user gets the first token in "
         << (ttft ? three_digits(*ttft) : std::string("?")) << " ms and "
         << (rate ? three_digits(*rate) : std::string("?")) << " tok/s (medians of "
         << user.summary.requests_ok << " requests). " << capacity_words(result);
  if (!result.why.empty()) {
    answer << " Why, at the boundary:";
    for (std::size_t i = 0; i < result.why.size(); ++i) {
      answer << (i == 0 ? " " : "; ") << scrub::terminal_text(result.why[i]);
    }
    answer << ".";
  }
  if (!result.charts_dir.empty()) answer << " Charts: " << result.charts_dir.string() << ".";
  answer << " Records: one user " << user.dir.string();
  if (!result.campaign_file.empty()) answer << ", campaign " << result.campaign_file.string();
  answer << "\n";
  out << answer.str();
  out.flush();
  return code;
}

void add_quick_options(CLI::App& cmd, QuickOptions& q) {
  cmd.add_option("--url", q.url,
                 "the server to measure, e.g. http://10.0.0.5:8000/v1 (default: find one on this "
                 "machine's loopback at the usual ports: Ollama 11434, llama.cpp 8080, LM Studio "
                 "1234, vLLM 8000, SGLang 30000, TGI 3000 and 8080; only loopback is probed)");
  cmd.add_option("--model", q.model,
                 "the model to request (default: the one the server lists on /v1/models)");
  cmd.add_option("--slo", q.slo, "the capacity's objectives, as dyno capacity's --slo")
      ->capture_default_str();
  cmd.add_option("--max-users", q.max_users, "the most users the capacity search probes")
      ->transform(flags::integer(1, flags::kMaxConcurrency))
      ->capture_default_str();
  cmd.add_option("--output-tokens", q.output_tokens, "output tokens of every request")
      ->transform(flags::integer(2, flags::kMaxTokens))
      ->capture_default_str();
  cmd.add_option("--api", q.api, "endpoint: chat (/chat/completions) or completions")
      ->check(CLI::IsMember({"chat", "completions"}))
      ->capture_default_str();
  cmd.add_option("--runs-root", q.runs_root, "directory that receives the run records")
      ->capture_default_str();
  cmd.add_flag("-q,--quiet", q.quiet, "no progress bars or progress lines");
}

}  // namespace dyno::app
