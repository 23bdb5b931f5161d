#include "app/sign_key_flag.h"

#include <CLI/CLI.hpp>

namespace dyno::app {

void add_sign_key_flag(CLI::App& cmd, std::string& path, const std::string& what) {
  cmd.add_option("--sign-key", path,
                 "sign " + what +
                     " with this Ed25519 private key (PEM; openssl genpkey -algorithm ed25519): "
                     "its fingerprint and signature go into a sidecar, docs/record.md "
                     "\"Signatures\"");
}

}  // namespace dyno::app
