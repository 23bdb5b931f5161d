// `dyno quick` (README "A one-minute answer"): finds a server on this machine's loopback at the
// usual ports (or takes --url), picks the model it serves, measures one user (a short closed
// loop at C=1) and runs a short capacity search (app/capacity_command.h) with default SLOs, and
// answers in one plain paragraph with the numbers and where the records are. It never probes
// anything but 127.0.0.1 unless the user gives --url.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace CLI {
class App;
}

namespace dyno::app {

/// Its defaults are the brief's "about a minute against a fast server".
struct QuickOptions {
  std::optional<std::string> url;    ///< --url: measure this server, no discovery
  std::optional<std::string> model;  ///< --model: when the server lists several (or none)
  std::string slo = "ttft_p90=500ms,tpot_p90=50ms,errors=1%";  ///< --slo: capacity objectives
  std::uint32_t one_user_requests = 8;  ///< measured requests of the one-user cell
  std::uint32_t output_tokens = 128;    ///< --output-tokens of every request
  std::uint32_t max_users = 32;         ///< --max-users: the capacity search's --max
  std::string runs_root = "runs";       ///< --runs-root
  std::string api = "chat";             ///< --api: chat or completions
  bool quiet = false;                   ///< -q: no progress bars
};

/// A loopback port a local server usually listens on, and who usually does.
struct UsualPort {
  std::uint16_t port = 0;
  std::string_view owner;  ///< e.g. "Ollama", "llama.cpp or TGI"
};

/// The ports discovery tries, in order: Ollama 11434, llama.cpp/TGI 8080, LM Studio 1234, vLLM
/// 8000, SGLang 30000, TGI 3000.
std::vector<UsualPort> usual_ports();

/// The ports discovery tries: usual_ports(), or the list in DYNO_QUICK_PORTS ("8081,9000":
/// plain decimal ports 1-65535, at most 16) when that variable is set — for tests, which must
/// not touch the real usual ports. Throws UsageError naming DYNO_QUICK_PORTS for a bad list.
std::vector<UsualPort> quick_ports(const char* env_value);

/// What a server's GET /v1/models answered: the ids it lists and the first entry's owned_by.
struct ModelList {
  std::vector<std::string> ids;
  std::optional<std::string> owned_by;
};

/// Reads an OpenAI /v1/models body ({"data":[{"id":…,"owned_by":…},…]}); nullopt when the body
/// is not that shape (the port answers, but not as an OpenAI-compatible server).
std::optional<ModelList> read_model_list(std::string_view body);

/// The model to measure: `given` (--model) when set, else the one model the server lists.
/// Throws UsageError when it lists none or several (naming them, asking for --model).
std::string pick_model(const ModelList& models, const std::optional<std::string>& given,
                       const std::string& where);

/// An engine's name as people write it, from what it says of itself ("llamacpp" →
/// "llama.cpp", "vllm" → "vLLM", "dyno-sim" → "dyno sim"…); `name` unchanged otherwise.
std::string engine_display_name(std::string_view name);

/// `x` with three significant digits (12.3, 850, 0.412), as the answer prints its figures.
std::string three_digits(double x);

/// Runs `dyno quick`: the answer on `out`, progress lines on `err`; returns its exit code (the
/// one-user cell's when it failed, else the capacity search's). Throws UsageError (exit 2) when
/// no server is found, several answer, or the model is ambiguous.
int quick_command(const QuickOptions& options, std::ostream& out, std::ostream& err);

/// Adds `dyno quick`'s flags to `cmd`.
void add_quick_options(CLI::App& cmd, QuickOptions& options);

}  // namespace dyno::app
