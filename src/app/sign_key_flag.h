// `--sign-key PATH` (a PEM Ed25519 private key; docs/record.md "Signatures"), as every command
// that writes records or campaign files takes it: `run` and the protocols (measure_flags.h),
// `import`, `rescore`, `runs merge` and `runs publish`.
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace dyno::app {

/// Registers --sign-key on `cmd`, writing the key file's path into `path`; `what` names what the
/// command signs with it ("each record"). The key is read by record::load_sign_key before the
/// command writes anything.
void add_sign_key_flag(CLI::App& cmd, std::string& path, const std::string& what);

}  // namespace dyno::app
