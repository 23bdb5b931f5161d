// `--index URL` (a run index in PostgreSQL, else $DYNO_INDEX_URL, else index.sqlite;
// docs/store.md "A shared index"), as every command that reads or writes the index takes it:
// `runs list|show|rm|reindex|publish`, `compare` and `report`.
#pragma once

#include <optional>
#include <string>

namespace CLI {
class App;
}

namespace dyno::app {

/// Registers --index on `cmd`, writing into `url`. Its help: `purpose`, the URL's form, and
/// what the command uses without a URL (`otherwise`).
void add_index_flag(CLI::App& cmd, std::optional<std::string>& url, const std::string& purpose,
                    const std::string& otherwise);

/// The index to use: --index when given, else DYNO_INDEX_URL, else "" (index.sqlite). Throws
/// an error of kind usage naming --index or DYNO_INDEX_URL when the URL is malformed (the
/// message shows it with its password replaced by ***).
std::string resolve_index_url(const std::optional<std::string>& flag);

}  // namespace dyno::app
