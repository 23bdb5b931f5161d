#include "app/target_counter.h"

#include "error/error.h"

namespace dyno::app {

namespace {

session::TargetOptions target_of(const TargetFlags& f) {
  if (f.url && !f.model) throw UsageError("--model is required with --url");
  session::TargetOptions t;
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
    : api_(session::parse_api(flags.api)),
      telemetry_(no_telemetry()),
      session_(target_of(flags), telemetry_, seed, api_, never_stop_),
      count_(session_, flags.timeout_s) {}

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

}  // namespace dyno::app
