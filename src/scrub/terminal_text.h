// Text from a server, a record or a file made safe for a terminal: control characters
// escaped and secrets scrubbed.
#pragma once

#include <string>
#include <string_view>

namespace dyno::scrub {

/// Text from a server, a record or a file, made safe to print on a terminal: every control
/// character (C0 — ESC included — DEL, and C1) is shown as an escape (`\e` never reaches the
/// terminal: ESC prints as `\x1b`, a C1 CSI as `\u009b`, a tab as `\t`), bytes that are not
/// UTF-8 as `\xNN`, and the API key (DYNO_API_KEY / OPENAI_API_KEY), should a server have
/// echoed it, as `<scrubbed:secret>`. A line break stays one unless `one_line` (table cells,
/// names), which shows it as `\n`. dyno's own colour codes are added after, never escaped.
std::string terminal_text(std::string_view text, bool one_line = false);

}  // namespace dyno::scrub
