// How long one request may take when the user set no limit: deadlines derived from the
// request itself, so that a stalled or endless response always ends (docs/metrics.md,
// "Timeouts"). Pure; shared by every target.
#pragma once

#include <chrono>
#include <optional>

#include "workload/request.h"

namespace dyno::transport {

/// The rule, in words, as the record states it (manifest load.timeouts_s.rule).
inline constexpr const char* kDerivedTimeoutRule =
    "first token: 60 s + 1 s per 4000 prompt bytes + 10 s per image; total: the first-token "
    "limit + 60 s + 0.25 s per max_tokens (no total limit without max_tokens); idle (between "
    "token events): 60 s";

/// The idle (between token events) limit when the user gave none.
inline constexpr std::chrono::milliseconds kDefaultIdleTimeout{60'000};

struct DerivedTimeouts {
  std::chrono::milliseconds first_token;           ///< from sent
  std::optional<std::chrono::milliseconds> total;  ///< from sent; none without max_tokens
};

/// The limits kDerivedTimeoutRule gives `request`.
DerivedTimeouts derive_timeouts(const workload::Request& request);

}  // namespace dyno::transport
