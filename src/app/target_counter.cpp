#include "app/target_counter.h"

#include "error/error.h"

namespace dyno::app {

namespace {

engine_session::TargetOptions target_of(const TargetFlags& f) {
  if (f.url && !f.model) throw UsageError("--model is required with --url");
  engine_session::TargetOptions t;
  t.url = f.url;
  t.model = f.model;
  t.api = f.api;
  t.profile = f.profile;
  t.insecure = f.insecure;
  t.ca_file = f.ca_file;
  return t;
}

telemetry::TelemetryOptions no_telemetry() {
  telemetry::TelemetryOptions t;
  t.mode = "off";  // no load is measured: no sampler thread, no idle baseline
  return t;
}

}  // namespace

TargetCounter::TargetCounter(const TargetFlags& flags, std::uint64_t seed)
    : api_(engine_session::parse_api(flags.api)),
      telemetry_(no_telemetry()),
      engine_session_(target_of(flags), telemetry_, seed, api_, never_stop_),
      count_(engine_session_, flags.timeout_s) {}

std::string TargetCounter::describe(const std::string& api_name) {
  std::string out;
  if (embedded()) {
    out += "no --url: lengths measured by the embedded dyno sim (" + engine() +
           "); its tokenizer is not your engine's\n";
  }
  out += "tokenizer: " + engine() + " /tokenize (" + flavor() + "), model " + model() + ", api " +
         api_name + "\n";
  return out;
}

std::vector<workload::PromptTokenCounter> TargetCounter::parallel(std::size_t n, double timeout_s) {
  std::vector<workload::PromptTokenCounter> out;
  for (std::size_t i = 0; i < n; ++i) {
    more_.push_back(std::make_unique<engine_session::PromptCounter>(engine_session_, timeout_s));
    engine_session::PromptCounter* c = more_.back().get();
    out.emplace_back([c](const workload::Request& r) { return (*c)(r); });
  }
  return out;
}

}  // namespace dyno::app
