// Number and text forms shared by the board's writers (README.md, report.html, console).
#pragma once

#include <optional>
#include <string>

namespace dyno::report {

/// Fixed decimals with thousands separators ("1,189.4"); "n/a" when absent.
std::string number(std::optional<double> v, int decimals);
/// A signed percentage: "+12.3 %", "−4.0 %" (U+2212); "n/a" when absent.
std::string signed_pct(std::optional<double> v, int decimals = 1);
/// A signed number without unit: "+10.1", "−3.0", "±0.0".
std::string signed_number(std::optional<double> v, int decimals = 1);
/// Signed percentage points: "+1.56 pp".
std::string signed_pp(std::optional<double> v, int decimals = 2);
/// US dollars: "$1.23" (from $1 on, cents), "$0.0123" (below, three significant digits);
/// "n/a" when absent.
std::string usd(std::optional<double> v);
/// Bytes in GiB: "20.29 GiB"; "n/a" when absent.
std::string gib(std::optional<double> bytes);
/// The first 12 characters of a hash (hex digits only) longer than 16; anything else whole.
std::string short_hash(const std::string& s);

/// Markdown-safe text: characters Markdown or HTML would interpret are escaped with a
/// backslash (\ ` * _ [ ] | # ~ and <; > at the start, & before a letter, digit or #), never
/// with an HTML entity, so the text reads the same raw and rendered; line breaks become
/// spaces. For every text that comes from a record.
std::string markdown_escape(const std::string& text);

}  // namespace dyno::report
