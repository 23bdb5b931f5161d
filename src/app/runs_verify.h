// `dyno runs verify` (runs and campaign files) and `dyno runs list --campaigns`
// (docs/store.md).
#pragma once

#include <ostream>

#include "app/runs_command.h"

namespace dyno::app {

/// Verifies the runs and campaign files named (or, with --all, every one under the runs
/// root); exit 3 when one fails.
int cmd_verify(const RunsOptions& o, std::ostream& out, std::ostream& err);

/// One line per campaign file under the runs root, filtered by --campaign, --protocol,
/// --status, --engine, --model (globs), --since and --until.
int cmd_list_campaigns(const RunsOptions& o, std::ostream& out, std::ostream& err);

}  // namespace dyno::app
