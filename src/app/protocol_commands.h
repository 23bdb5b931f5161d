// The protocols as commands (docs/protocols.md, docs/extending.md "A protocol"): sweep,
// ladder, speed and real, each an entry of the same shape as the command table's
// (app/commands.h) — its name, its --help line, its flags (the shared measuring flags, then its
// own) and the command that runs it (app/protocols.h), which makes its plan (protocol/plan.h).
#pragma once

#include <span>

#include "app/commands.h"

namespace dyno::app {

/// Every protocol, in the order `dyno --help` lists them (after `run`).
std::span<const Command> protocols();

}  // namespace dyno::app
