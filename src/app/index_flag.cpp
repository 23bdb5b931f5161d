#include "app/index_flag.h"

#include <CLI/CLI.hpp>

#include "app/exit_codes.h"
#include "error/error.h"
#include "store/index_url.h"

namespace dyno::app {

void add_index_flag(CLI::App& cmd, std::optional<std::string>& url, const std::string& purpose,
                    const std::string& otherwise) {
  cmd.add_option("--index", url,
                 purpose + ": postgresql://[user@]host[:port]/db (default: $DYNO_INDEX_URL, else " +
                     otherwise + "; docs/store.md)");
}

std::string resolve_index_url(const std::optional<std::string>& flag) {
  const std::string url = flag ? *flag : store::index_url_from_env();
  if (url.empty()) {
    if (flag) throw UsageError("--index: an empty URL; give postgresql://… or leave it out");
    return url;
  }
  about(flag ? "--index" : store::kIndexUrlEnv, [&] { store::check_index_url(url); });
  return url;
}

}  // namespace dyno::app
