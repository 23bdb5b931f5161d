#include "engine/launch.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "digest/digest.h"
#include "record/run_id.h"
#include "record/run_writer.h"
#include "scrub/redact.h"
#include "scrub/scrub.h"
#include "scrub/terminal_text.h"
#include "transport/event_loop.h"
#include "transport/tokenize_client.h"

namespace dyno::engine {

namespace json = boost::json;

namespace {

constexpr std::size_t kMaxCellLogBytes = 16u << 20;  // a cell's slice beyond this keeps its tail
constexpr std::size_t kLongString = 2000;            // identity strings longer are summarised

std::string self_exe() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("dyno") : p.string();
}

/// A free TCP port on `host` (bound, read, closed: another process could take it before the
/// engine binds it, which then fails the launch with the engine's own message).
int pick_free_port(const std::string& host) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  int family = AF_INET;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    len = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    family = AF_INET6;
    v6->sin6_family = AF_INET6;
    len = sizeof(sockaddr_in6);
  } else {
    throw UsageError("--engine: host '" + host +
                     "' is not an IP address; with port = \"auto\" give host = \"127.0.0.1\"");
  }
  const int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw LaunchError("socket() failed while picking a free port");
  if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
    ::close(fd);
    throw LaunchError("could not pick a free port on " + host);
  }
  ::close(fd);
  return ntohs(family == AF_INET ? v4->sin_port : v6->sin6_port);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// The base path's part below the server root, as TokenizeClient splits it ("/v1" or "").
std::string api_suffix(const std::string& api_path) {
  if (api_path.size() >= 3 && api_path.compare(api_path.size() - 3, 3, "/v1") == 0) return "/v1";
  return "";
}

json::value shorten_long_strings(json::value v) {
  if (v.is_string() && v.as_string().size() > kLongString) {
    return json::value("<" + std::to_string(v.as_string().size()) + " characters, sha256 " +
                       digest::sha256_hex(std::string(v.as_string())) + ">");
  }
  if (v.is_object()) {
    for (auto& kv : v.as_object()) kv.value() = shorten_long_strings(std::move(kv.value()));
  } else if (v.is_array()) {
    for (auto& e : v.as_array()) e = shorten_long_strings(std::move(e));
  }
  return v;
}

const json::value* find_key(const json::value& v, const char* key) {
  if (!v.is_object()) return nullptr;
  return v.as_object().if_contains(key);
}

std::optional<std::string> string_at(const json::value& v, const char* key) {
  const json::value* s = find_key(v, key);
  if (s != nullptr && s->is_string()) return std::string(s->as_string());
  return std::nullopt;
}

}  // namespace

ScrubbedLaunch scrub_launch_line(const LaunchLine& line) {
  ScrubbedLaunch out;
  json::array argv;
  for (const auto& a : line.argv) argv.emplace_back(a);
  json::object env;
  for (const auto& [k, v] : line.env) env[k] = v;
  json::value doc = json::object{{"argv", argv}, {"env", env}};
  scrub::redact_secrets(doc);
  out.argv = doc.at("argv").as_array();
  out.env = doc.at("env").as_object();
  // What changed is secret: the part of each value between what it kept at both ends
  // ("--hf-token=X" keeps "--hf-token=", "https://user:pw@host" keeps "https://" and "@host").
  const auto removed = [&out](const std::string& before, const std::string& after) {
    if (before == after) return;
    std::size_t p = 0;
    while (p < before.size() && p < after.size() && before[p] == after[p]) ++p;
    std::size_t q = 0;
    while (q < before.size() - p && q < after.size() - p &&
           before[before.size() - 1 - q] == after[after.size() - 1 - q]) {
      ++q;
    }
    if (p > 0 && before[p - 1] == '<') --p;  // the marker's '<' is not the secret's
    const std::string secret = before.substr(p, before.size() - p - q);
    if (secret.size() >= 4) out.secrets.push_back(secret);
  };
  for (std::size_t i = 0; i < line.argv.size(); ++i) {
    removed(line.argv[i], std::string(out.argv[i].as_string()));
  }
  for (const auto& [k, v] : line.env) {
    const json::value& after = out.env.at(k);
    if (after.is_string()) removed(v, std::string(after.as_string()));
  }
  std::sort(out.secrets.begin(), out.secrets.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  return out;
}

std::string redact_values(std::string text, const std::vector<std::string>& secrets) {
  scrub::redact_literals(text, scrub::normalize_secrets(secrets));
  return text;
}

std::vector<std::string> known_identity_paths() {
  return {"/version", "/props", "/info", "/get_server_info", "/api/version", "/v1/models"};
}

json::object query_engine_identity(const std::string& base_url,
                                   const std::vector<std::string>& paths,
                                   const std::optional<std::string>& api_key, bool tls_verify,
                                   const std::optional<std::string>& ca_file) {
  json::object out;
  json::object sources;
  json::object unavailable;
  std::optional<std::string> name, version, model_id, revision;
  std::unique_ptr<transport::TokenizeClient> client;
  try {
    transport::TokenizeClientOptions co;
    co.timeout = std::chrono::milliseconds(5000);
    co.tls_verify = tls_verify;
    co.ca_file = ca_file;
    client = std::make_unique<transport::TokenizeClient>(transport::BaseUrl::parse(base_url), "",
                                                         api_key, co);
  } catch (const std::exception& e) {
    out["reason"] = std::string("cannot query the engine: ") + e.what();
    return out;
  }
  for (const auto& path : paths) {
    transport::TokenizeClient::HttpReply r;
    try {
      r = client->call("GET", path);
    } catch (const std::exception& e) {
      unavailable[path] = e.what();
      continue;
    }
    if (r.status != 200) {
      unavailable[path] = "HTTP " + std::to_string(r.status);
      continue;
    }
    boost::system::error_code ec;
    json::value body = json::parse(r.body, ec);
    if (ec) {
      unavailable[path] = "not JSON";
      continue;
    }
    scrub::redact_secrets(body);  // e.g. SGLang's server_info carries its api_key
    body = shorten_long_strings(std::move(body));
    // Derive the common fields from the shapes engines are known to answer with.
    if (path == "/version") {
      if (auto v = string_at(body, "version")) version = version.value_or(*v);
      if (auto e = string_at(body, "engine")) name = name.value_or(*e);
      if (!name && version) name = "vllm";
    } else if (path == "/props") {
      name = "llama.cpp";
      if (auto b = string_at(body, "build_info")) version = *b;
      if (auto m = string_at(body, "model_alias")) model_id = model_id.value_or(*m);
    } else if (path == "/info") {
      if (auto m = string_at(body, "model_id")) {
        name = name.value_or("text-generation-inference");
        model_id = *m;
      }
      if (auto v = string_at(body, "version")) version = *v;
      if (auto s = string_at(body, "model_sha")) revision = *s;
    } else if (path == "/get_server_info" || path == "/server_info") {
      name = "sglang";
      if (auto v = string_at(body, "version")) version = *v;
      if (auto m = string_at(body, "served_model_name")) model_id = model_id.value_or(*m);
    } else if (path == "/api/version") {
      name = name.value_or("ollama");
      if (auto v = string_at(body, "version")) version = version.value_or(*v);
    } else if (path == "/v1/models") {
      const json::value* data = find_key(body, "data");
      if (data != nullptr && data->is_array() && !data->as_array().empty()) {
        if (auto id = string_at(data->as_array()[0], "id")) model_id = *id;
        if (auto owner = string_at(data->as_array()[0], "owned_by"); owner && !name) {
          if (*owner == "vllm" || *owner == "sglang" || *owner == "llamacpp") name = *owner;
        }
      }
    }
    sources[path] = std::move(body);
  }
  const auto put = [&out](const char* key, const std::optional<std::string>& v) {
    out[key] = v ? json::value(*v) : json::value(nullptr);
  };
  put("name", name);
  put("version", version);
  put("model_id", model_id);
  put("model_revision", revision);
  out["sources"] = std::move(sources);
  out["unavailable"] = std::move(unavailable);
  return out;
}

LaunchedEngine::LaunchedEngine(EngineSpec spec, workload::Api api,
                               std::optional<std::string> api_key, const std::atomic<bool>& stop)
    : spec_(std::move(spec)) {
  port_ = spec_.port ? *spec_.port : pick_free_port(spec_.host);
  line_ = launch_line(spec_, LaunchValues{port_, self_exe()});
  scrubbed_ = scrub_launch_line(line_);
  secrets_ = scrubbed_.secrets;
  // The key dyno sends, of any length (docs/store.md): an engine may log what it receives.
  if (api_key && !api_key->empty()) secrets_.push_back(*api_key);
  const auto now = std::chrono::system_clock::now();
  launch_id_ = record::make_run_id(now, spec_.name);
  launched_at_ = record::iso8601_utc(now);
  // The raw log stays private (it may hold what the engine prints of its secrets); records
  // get redacted slices of it.
  log_path_ = std::filesystem::temp_directory_path() / ("dyno-engine-" + launch_id_ + ".log");
  const int fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) throw LaunchError("cannot create the engine log " + log_path_.string());
  ::close(fd);

  ProcessOptions po;
  po.argv = line_.argv;
  po.env = line_.env;
  po.workdir = spec_.workdir;
  po.log_path = log_path_.string();
  const auto t0 = std::chrono::steady_clock::now();
  std::cerr << "dyno: starting engine " << scrub::terminal_text(spec_.name, true) << " ("
            << scrub::terminal_text(spec_.file, true) << ") on port " << port_ << "\n";
  try {
    process_ = std::make_unique<EngineProcess>(po);
  } catch (ProcessError& e) {  // kind input: the spec's command cannot start (exit 2)
    std::filesystem::remove(log_path_);
    e.add_subject("--engine " + spec_.file);
    throw;
  }
  process_->on_unexpected_exit([this](const ExitStatus&) { exited_.store(true); });

  // From here on a failure stops the engine before it propagates.
  const auto fail = [&](const std::string& why) {
    process_->stop(SIGKILL, 0);
    const std::string tail = log_tail(20).text;
    std::filesystem::remove(log_path_);
    throw LaunchError("engine " + spec_.name + " (" + spec_.file + ") " + why +
                      (tail.empty() ? std::string("; its log is empty")
                                    : "; the last lines of its log:\n" + tail));
  };
  transport::TokenizeClientOptions co;
  co.timeout = std::chrono::milliseconds(
      static_cast<std::int64_t>(std::max(1.0, std::min(10.0, spec_.ready.timeout_s)) * 1000));
  transport::TokenizeClient client(transport::BaseUrl::parse(base_url()), spec_.model, api_key, co);
  const auto deadline = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                 std::chrono::duration<double>(spec_.ready.timeout_s));
  const auto interval = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(spec_.ready.interval_s));
  const auto check_alive = [&] {
    if (stop.load()) fail("was stopped before it was ready (interrupted)");
    if (auto st = process_->exit_status()) fail(st->describe() + " before it was ready");
    if (std::chrono::steady_clock::now() > deadline) {
      fail("was not ready within " + std::to_string(static_cast<int>(spec_.ready.timeout_s)) +
           " s (ready.timeout_s)");
    }
  };
  // 1. The probe.
  std::uint64_t scanned = 0;
  std::string last_probe = "no answer yet";
  while (true) {
    check_alive();
    bool ok = false;
    if (spec_.ready.log_line) {
      const std::uint64_t size = log_size();
      const std::uint64_t from =
          scanned >= spec_.ready.log_line->size() ? scanned - spec_.ready.log_line->size() : 0;
      ok = read_log(from, size).find(*spec_.ready.log_line) != std::string::npos;
      scanned = size;
    }
    if (!ok && spec_.ready.http_path) {
      try {
        const auto r = client.call("GET", *spec_.ready.http_path);
        ok = r.status == spec_.ready.http_status;
        last_probe = "HTTP " + std::to_string(r.status);
      } catch (const std::exception& e) {
        last_probe = e.what();
      }
      if (spec_.ready.log_line) ok = false;  // both given: the log line decides
    }
    if (ok) break;
    std::this_thread::sleep_for(interval);
  }
  probe_ready_s_ = seconds_since(t0);
  // 2. One 1-token request (engines answer /health before the model serves).
  if (spec_.ready.first_request) {
    const bool chat = api == workload::Api::kChat;
    json::object body{
        {"model", spec_.model}, {"max_tokens", 1}, {"stream", false}, {"temperature", 0.0}};
    if (chat) {
      body["messages"] = json::array{json::object{{"role", "user"}, {"content", "Hello"}}};
    } else {
      body["prompt"] = "Hello";
    }
    const std::string path =
        api_suffix(spec_.api_path) + (chat ? "/chat/completions" : "/completions");
    const std::string text = json::serialize(body);
    while (true) {
      check_alive();
      std::string why;
      try {
        const auto r = client.call("POST", path, text);
        if (r.status == 200) break;
        why = "HTTP " + std::to_string(r.status) + " " + r.body.substr(0, 200);
        // A refusal that waiting cannot cure fails the launch now.
        if (r.status == 400 || r.status == 401 || r.status == 403 || r.status == 404) {
          fail("refused the first request (POST " + path + "): " + why +
               "; check the spec's model and api (--api)");
        }
      } catch (const transport::TokenizeError& e) {
        why = e.what();
      }
      last_probe = why;
      std::this_thread::sleep_for(interval);
    }
    first_request_s_ = seconds_since(t0) - probe_ready_s_;
  }
  ready_s_ = probe_ready_s_ + first_request_s_.value_or(0.0);  // its two parts, exactly
  ready_log_offset_ = log_size();
  char ready[32];
  std::snprintf(ready, sizeof ready, "%.2f", ready_s_);
  std::cerr << "dyno: engine " << scrub::terminal_text(spec_.name, true) << " ready in " << ready
            << " s\n";
  reported_ = query_engine_identity(base_url(), spec_.identity_paths, api_key);
}

LaunchedEngine::~LaunchedEngine() {
  stop();
  std::error_code ec;
  std::filesystem::remove(log_path_, ec);
}

std::string LaunchedEngine::base_url() const {
  const bool v6 = spec_.host.find(':') != std::string::npos;
  return "http://" + (v6 ? "[" + spec_.host + "]" : spec_.host) + ":" + std::to_string(port_) +
         spec_.api_path;
}

std::optional<ExitStatus> LaunchedEngine::unexpected_exit() const {
  if (stopping_.load()) return std::nullopt;
  return process_->exit_status();
}

bool LaunchedEngine::wait_for_exit(std::chrono::milliseconds timeout) const {
  return process_->wait_for(timeout) && !stopping_.load();
}

EngineProcess::StopResult LaunchedEngine::stop() {
  stopping_.store(true);
  const auto sig = signal_number(spec_.stop_signal).value_or(SIGTERM);
  return process_->stop(sig, spec_.stop_grace_s);
}

std::uint64_t LaunchedEngine::log_size() const {
  std::error_code ec;
  const auto n = std::filesystem::file_size(log_path_, ec);
  return ec ? 0 : n;
}

std::string LaunchedEngine::read_log(std::uint64_t begin, std::uint64_t end) const {
  if (end <= begin) return {};
  std::ifstream in(log_path_, std::ios::binary);
  if (!in) return {};
  in.seekg(static_cast<std::streamoff>(begin));
  std::string out(end - begin, '\0');
  in.read(out.data(), static_cast<std::streamsize>(out.size()));
  out.resize(static_cast<std::size_t>(in.gcount()));
  return out;
}

std::string LaunchedEngine::cell_log(std::uint64_t begin, std::uint64_t end) const {
  std::string out = read_log(0, ready_log_offset_);
  if (begin > ready_log_offset_) {
    out += "\n[dyno: " + std::to_string(begin - ready_log_offset_) +
           " bytes of log between readiness and this cell are in the earlier cells' records]\n";
  }
  begin = std::max(begin, ready_log_offset_);
  if (end > begin && end - begin > kMaxCellLogBytes) {
    out += "\n[dyno: " + std::to_string(end - begin - kMaxCellLogBytes) +
           " bytes of this cell's log omitted; the last 16 MiB follow]\n";
    begin = end - kMaxCellLogBytes;
  }
  out += read_log(begin, end);
  return redact_values(std::move(out), secrets_);
}

LaunchedEngine::LogTail LaunchedEngine::log_tail(int lines) const {
  const std::uint64_t size = log_size();
  const std::uint64_t from = size > 256 * 1024 ? size - 256 * 1024 : 0;
  const std::string text = read_log(from, size);
  // Walk back line by line, keeping `lines` that are not dyno's own probes.
  std::vector<std::string_view> kept;
  LogTail tail;
  std::size_t end = text.size();
  if (end > 0 && text[end - 1] == '\n') --end;
  while (static_cast<int>(kept.size()) < lines && end > 0) {
    const std::size_t nl = text.rfind('\n', end - 1);
    const std::size_t begin = nl == std::string::npos ? 0 : nl + 1;
    const std::string_view line(text.data() + begin, end - begin);
    if (is_probe_access_line(line, spec_.ready.http_path)) {
      ++tail.probe_lines_skipped;
    } else {
      kept.push_back(line);
    }
    if (nl == std::string::npos) break;
    end = nl;
  }
  for (auto it = kept.rbegin(); it != kept.rend(); ++it) {
    tail.text.append(*it);
    tail.text.push_back('\n');
  }
  tail.text = redact_values(std::move(tail.text), secrets_);
  return tail;
}

bool is_probe_access_line(std::string_view line, const std::optional<std::string>& ready_path) {
  static const std::vector<std::string> kGet = [] {
    std::vector<std::string> paths = known_identity_paths();
    paths.insert(paths.end(), {"/metrics", "/health", "/v1/health"});
    return paths;
  }();
  static const std::vector<std::string> kPost = {"/tokenize", "/apply-template", "/detokenize"};
  const auto has = [&line](std::string_view method, std::string_view path) {
    std::string needle(method);
    needle += ' ';
    needle += path;
    for (std::size_t at = line.find(needle); at != std::string_view::npos;
         at = line.find(needle, at + 1)) {
      const std::size_t after = at + needle.size();
      if (after == line.size() || line[after] == ' ' || line[after] == '"' || line[after] == '?') {
        return true;
      }
    }
    return false;
  };
  for (const auto& p : kGet) {
    if (has("GET", p)) return true;
  }
  for (const auto& p : kPost) {
    if (has("POST", p)) return true;
  }
  return ready_path && !ready_path->empty() && has("GET", *ready_path);
}

json::object LaunchedEngine::launch_json(std::uint64_t cell_index) const {
  json::array argv = scrubbed_.argv;
  json::object env = scrubbed_.env;
  json::object ready{{"http_path", spec_.ready.http_path ? json::value(*spec_.ready.http_path)
                                                         : json::value(nullptr)},
                     {"http_status", spec_.ready.http_status},
                     {"log_line", spec_.ready.log_line ? json::value(*spec_.ready.log_line)
                                                       : json::value(nullptr)},
                     {"timeout_s", spec_.ready.timeout_s},
                     {"first_request", spec_.ready.first_request}};
  return json::object{
      {"launch_id", launch_id_},
      {"spec_file", std::filesystem::path(spec_.file).filename().string()},
      {"spec_sha256", spec_.file_sha256},
      {"preset", spec_.preset.empty() ? json::value(nullptr) : json::value(spec_.preset)},
      {"argv", std::move(argv)},
      {"env", std::move(env)},
      {"workdir", spec_.workdir ? json::value(*spec_.workdir) : json::value(nullptr)},
      {"container_image",
       spec_.container_image ? json::value(*spec_.container_image) : json::value(nullptr)},
      {"port", port_},
      {"launched_at", launched_at_},
      {"ready_s", ready_s_},
      {"probe_ready_s", probe_ready_s_},
      {"first_request_s", first_request_s_ ? json::value(*first_request_s_) : json::value(nullptr)},
      {"ready", std::move(ready)},
      {"stop", json::object{{"signal", spec_.stop_signal}, {"grace_s", spec_.stop_grace_s}}},
      {"cell_index", cell_index},
      {"shared_by_cells", true},
      {"log", "evidence/engine.log"}};
}

}  // namespace dyno::engine
