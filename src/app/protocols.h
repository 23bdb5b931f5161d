// The protocol commands — sweep, ladder, speed, real: their flags checked, the engine session
// made, the plan (protocol/plan.h) run as a campaign, its file written
// (<runs-root>/campaigns/<id>.json) and its table printed (docs/protocols.md).
#pragma once

#include "app/run_command.h"
#include "protocol/plan.h"

namespace dyno::app {

using protocol::LadderOptions;
using protocol::RealOptions;
using protocol::RepeatOptions;
using protocol::SpeedOptions;
using protocol::SweepOptions;

int sweep_command(const RunOptions& options, const SweepOptions& sweep);
int ladder_command(const RunOptions& options, const LadderOptions& ladder);
int speed_command(const RunOptions& options, const SpeedOptions& speed);
int real_command(const RunOptions& options, const RealOptions& real);

}  // namespace dyno::app
