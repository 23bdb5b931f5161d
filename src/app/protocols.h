// The protocol commands — sweep, ladder, speed, real: their flags checked, the engine session
// made, the plan (protocol/plan.h) run as a campaign, its file written
// (<runs-root>/campaigns/<id>.json) and its table printed (docs/protocols.md).
#pragma once

#include <boost/json/object.hpp>
#include <filesystem>
#include <string>

#include "app/run_command.h"
#include "engine_session/engine_session.h"
#include "protocol/campaign.h"
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

// What every campaign command (the protocols above, capacity) shares.

/// The shared flags checked (and what the user declares of the campaign) before the engine
/// starts; exit 2 naming the flag.
protocol::Shared shared_flags(const RunOptions& o, const protocol::CampaignDeclared& declared);

/// The command's engine session (a --url server, a launched --engine, a plugin or the sim).
engine_session::EngineSession make_engine(const RunOptions& o, workload::Api api);

/// The campaign document with the engine session's identity, VRAM and hardware line.
boost::json::object campaign_document(const protocol::ProtocolCampaign& campaign,
                                      engine_session::EngineSession& engine);

/// Writes <runs-root>/campaigns/<id>.json atomically (secrets out, digest in, signed with
/// --sign-key) and returns its path; `doc` gets the recorded digest, as the file says.
std::filesystem::path write_campaign_file(boost::json::object& doc, const RunOptions& o,
                                          const engine_session::EngineSession& engine,
                                          const std::string& campaign_id);

/// A campaign's exit code from its status (ok, interrupted, or a failure).
int campaign_exit_code(const std::string& status);

}  // namespace dyno::app
