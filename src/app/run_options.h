// The flags of a measuring command (`dyno run` and the protocols), as parsed (defaults applied
// by CLI11): one config per module that uses it.
#pragma once

#include "engine_session/options.h"
#include "load/options.h"
#include "record/options.h"
#include "telemetry/options.h"
#include "workload/stream_options.h"

namespace dyno::app {

/// How results are shown (flags --json, --quiet, --color).
struct ConsoleOptions {
  bool json = false;
  bool quiet = false;
  std::string color = "auto";
};

struct RunOptions {
  engine_session::TargetOptions target;
  workload::StreamOptions stream;
  load::LoadOptions load;
  telemetry::TelemetryOptions telemetry;
  record::RecordOptions record;
  ConsoleOptions console;
};

}  // namespace dyno::app
