// The TOML reader (engine/toml.h): any text parses or throws TomlError "<source>:<line>: ..."
// naming a line of the text; every key of a parsed document has a line in the text.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/toml.h"
#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  int lines = 1;
  for (const char c : text) lines += c == '\n' ? 1 : 0;
  try {
    const dyno::engine::TomlDocument doc = dyno::engine::parse_toml(text, "fuzz.toml");
    for (const auto& [path, line] : doc.lines) {
      FUZZ_CHECK(line >= 1 && line <= lines);
      FUZZ_CHECK(doc.line_of(path) == line);
    }
  } catch (const dyno::engine::TomlError& error) {
    const std::string what = error.what();
    FUZZ_CHECK(what.rfind("fuzz.toml:", 0) == 0);
    // "fuzz.toml:<line>: <message>", the line one of the text's.
    std::size_t i = 10;
    int line = 0;
    while (i < what.size() && what[i] >= '0' && what[i] <= '9' && line <= lines) {
      line = line * 10 + (what[i++] - '0');
    }
    FUZZ_CHECK(line >= 1 && line <= lines);
    FUZZ_CHECK(what.compare(i, 2, ": ") == 0 && what.size() > i + 2);
  }
  return 0;
}
