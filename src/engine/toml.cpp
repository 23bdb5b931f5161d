#include "engine/toml.h"

#include <boost/json.hpp>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

namespace dyno::engine {

namespace json = boost::json;

int TomlDocument::line_of(const std::string& path) const {
  std::string p = path;
  while (true) {
    if (auto it = lines.find(p); it != lines.end()) return it->second;
    const auto dot = p.rfind('.');
    if (dot == std::string::npos) return 0;
    p.resize(dot);
  }
}

namespace {

class Parser {
 public:
  Parser(std::string_view text, const std::string& source) : s_(text), source_(source) {}

  TomlDocument run() {
    json::object* table = &doc_.root;
    std::string table_path;
    while (true) {
      skip_ws_comments_newlines();
      if (at_end()) break;
      if (peek() == '[') {
        if (s_.substr(i_).rfind("[[", 0) == 0) {
          fail(
              "arrays of tables ([[...]]) are not supported in engine specs; use an inline "
              "array of tables or separate keys");
        }
        ++i_;
        skip_ws();
        std::vector<std::string> keys = key_path();
        skip_ws();
        expect(']', "a ']' closing the table header");
        end_of_line();
        table = &doc_.root;
        table_path.clear();
        for (std::size_t k = 0; k < keys.size(); ++k) {
          table_path += (k == 0 ? "" : ".") + keys[k];
          json::value& v = (*table)[keys[k]];
          if (v.is_null()) {
            v = json::object();
            doc_.lines.emplace(table_path, line_);
          } else if (!v.is_object()) {
            fail("'" + table_path + "' is already a value, not a table");
          } else if (k + 1 == keys.size() && defined_tables_.count(table_path) != 0) {
            fail("table [" + table_path + "] is defined twice");
          }
          table = &v.as_object();
        }
        defined_tables_.insert(table_path);
        continue;
      }
      key_value(*table, table_path);
      end_of_line();
    }
    return std::move(doc_);
  }

 private:
  [[noreturn]] void fail(const std::string& message) const {
    throw TomlError(source_ + ":" + std::to_string(line_) + ": " + message);
  }
  bool at_end() const { return i_ >= s_.size(); }
  char peek(std::size_t ahead = 0) const { return i_ + ahead < s_.size() ? s_[i_ + ahead] : '\0'; }
  void expect(char c, const char* what) {
    if (peek() != c) fail(std::string("expected ") + what);
    ++i_;
  }
  void skip_ws() {
    while (!at_end() && (peek() == ' ' || peek() == '\t')) ++i_;
  }
  void skip_comment() {
    if (peek() == '#') {
      while (!at_end() && peek() != '\n') ++i_;
    }
  }
  void newline() {
    if (peek() == '\r' && peek(1) == '\n') ++i_;
    if (peek() == '\n') {
      ++i_;
      ++line_;
    }
  }
  void skip_ws_comments_newlines() {
    while (!at_end()) {
      skip_ws();
      skip_comment();
      if (peek() == '\n' || (peek() == '\r' && peek(1) == '\n')) {
        newline();
      } else {
        break;
      }
    }
  }
  void end_of_line() {
    skip_ws();
    skip_comment();
    if (at_end()) return;
    if (peek() != '\n' && !(peek() == '\r' && peek(1) == '\n')) {
      fail("unexpected text after a value: '" + std::string(s_.substr(i_, 20)) +
           "' (one key = value per line)");
    }
    newline();
  }

  static bool bare_key_char(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  }

  std::string one_key() {
    if (peek() == '"') return basic_string();
    if (peek() == '\'') return literal_string();
    const std::size_t start = i_;
    while (!at_end() && bare_key_char(peek())) ++i_;
    if (i_ == start) fail("expected a key (letters, digits, '_' or '-', or a quoted key)");
    return std::string(s_.substr(start, i_ - start));
  }

  std::vector<std::string> key_path() {
    std::vector<std::string> keys{one_key()};
    while (true) {
      skip_ws();
      if (peek() != '.') break;
      ++i_;
      skip_ws();
      keys.push_back(one_key());
    }
    return keys;
  }

  void key_value(json::object& table, const std::string& table_path) {
    const int key_line = line_;
    std::vector<std::string> keys = key_path();
    skip_ws();
    expect('=', "'=' after the key");
    skip_ws();
    json::object* t = &table;
    std::string path = table_path;
    for (std::size_t k = 0; k + 1 < keys.size(); ++k) {
      path += (path.empty() ? "" : ".") + keys[k];
      json::value& v = (*t)[keys[k]];
      if (v.is_null()) {
        v = json::object();
        doc_.lines.emplace(path, key_line);
      } else if (!v.is_object()) {
        fail("'" + path + "' is already a value, not a table");
      }
      t = &v.as_object();
    }
    path += (path.empty() ? "" : ".") + keys.back();
    if (t->contains(keys.back())) fail("key '" + path + "' is defined twice");
    json::value v = value(path);
    doc_.lines.emplace(path, key_line);
    (*t)[keys.back()] = std::move(v);
  }

  json::value value(const std::string& path) {
    const char c = peek();
    if (c == '"') {
      if (s_.substr(i_).rfind("\"\"\"", 0) == 0) return json::value(multiline_basic());
      return json::value(basic_string());
    }
    if (c == '\'') {
      if (s_.substr(i_).rfind("'''", 0) == 0) return json::value(multiline_literal());
      return json::value(literal_string());
    }
    if (c == '[') return array(path);
    if (c == '{') return inline_table(path);
    if (s_.substr(i_).rfind("true", 0) == 0 && !bare_key_char(peek(4))) {
      i_ += 4;
      return json::value(true);
    }
    if (s_.substr(i_).rfind("false", 0) == 0 && !bare_key_char(peek(5))) {
      i_ += 5;
      return json::value(false);
    }
    return number();
  }

  void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) fail("invalid unicode escape");
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  void escape(std::string& out) {
    ++i_;  // the backslash
    const char e = peek();
    ++i_;
    switch (e) {
      case 'b':
        out += '\b';
        return;
      case 't':
        out += '\t';
        return;
      case 'n':
        out += '\n';
        return;
      case 'f':
        out += '\f';
        return;
      case 'r':
        out += '\r';
        return;
      case '"':
        out += '"';
        return;
      case '\\':
        out += '\\';
        return;
      case 'u':
      case 'U': {
        const std::size_t n = e == 'u' ? 4 : 8;
        std::uint32_t cp = 0;
        for (std::size_t k = 0; k < n; ++k) {
          const char h = peek();
          ++i_;
          cp <<= 4;
          if (h >= '0' && h <= '9') {
            cp |= static_cast<std::uint32_t>(h - '0');
          } else if (h >= 'a' && h <= 'f') {
            cp |= static_cast<std::uint32_t>(h - 'a' + 10);
          } else if (h >= 'A' && h <= 'F') {
            cp |= static_cast<std::uint32_t>(h - 'A' + 10);
          } else {
            fail("bad unicode escape: \\" + std::string(1, e) + " needs " + std::to_string(n) +
                 " hex digits");
          }
        }
        append_utf8(out, cp);
        return;
      }
      default:
        fail(std::string("unknown escape \\") + e +
             " in a string (use \\\\ for a backslash, "
             "or a 'literal string')");
    }
  }

  std::string basic_string() {
    ++i_;
    std::string out;
    while (true) {
      if (at_end() || peek() == '\n') fail("unterminated string (strings end on their line)");
      const char c = peek();
      if (c == '"') {
        ++i_;
        return out;
      }
      if (c == '\\') {
        escape(out);
      } else {
        out += c;
        ++i_;
      }
    }
  }

  std::string literal_string() {
    ++i_;
    const std::size_t start = i_;
    while (!at_end() && peek() != '\'' && peek() != '\n') ++i_;
    if (peek() != '\'') fail("unterminated literal string");
    std::string out(s_.substr(start, i_ - start));
    ++i_;
    return out;
  }

  std::string multiline_basic() {
    i_ += 3;
    if (peek() == '\n') newline();  // a newline right after the opening quotes is trimmed
    std::string out;
    while (true) {
      if (at_end()) fail("unterminated multi-line string");
      if (s_.substr(i_).rfind("\"\"\"", 0) == 0) {
        i_ += 3;
        return out;
      }
      const char c = peek();
      if (c == '\\') {
        if (peek(1) == '\n' || (peek(1) == '\r' && peek(2) == '\n') || peek(1) == ' ') {
          ++i_;  // line-ending backslash: trim the newline and the following whitespace
          while (!at_end() &&
                 (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) {
            if (peek() == '\n') ++line_;
            ++i_;
          }
          continue;
        }
        escape(out);
      } else {
        if (c == '\n') ++line_;
        out += c;
        ++i_;
      }
    }
  }

  std::string multiline_literal() {
    i_ += 3;
    if (peek() == '\n') newline();
    std::string out;
    while (true) {
      if (at_end()) fail("unterminated multi-line literal string");
      if (s_.substr(i_).rfind("'''", 0) == 0) {
        i_ += 3;
        return out;
      }
      if (peek() == '\n') ++line_;
      out += peek();
      ++i_;
    }
  }

  void skip_array_space() {
    while (!at_end()) {
      skip_ws();
      skip_comment();
      if (peek() == '\n' || (peek() == '\r' && peek(1) == '\n')) {
        newline();
      } else {
        return;
      }
    }
  }

  json::value array(const std::string& path) {
    ++i_;
    json::array out;
    while (true) {
      skip_array_space();
      if (at_end()) fail("unterminated array (missing ']')");
      if (peek() == ']') {
        ++i_;
        return out;
      }
      out.push_back(value(path + "[" + std::to_string(out.size()) + "]"));
      skip_array_space();
      if (peek() == ',') {
        ++i_;
      } else if (at_end()) {
        fail("unterminated array (missing ']')");
      } else if (peek() != ']') {
        fail("expected ',' or ']' in the array of '" + path + "'");
      }
    }
  }

  json::value inline_table(const std::string& path) {
    ++i_;
    json::object out;
    skip_ws();
    if (peek() == '}') {
      ++i_;
      return out;
    }
    while (true) {
      skip_ws();
      key_value(out, path);
      skip_ws();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      if (peek() == '}') {
        ++i_;
        return out;
      }
      fail("expected ',' or '}' in the inline table of '" + path +
           "' (inline tables stay on one line)");
    }
  }

  json::value number() {
    const std::size_t start = i_;
    while (!at_end() &&
           (bare_key_char(peek()) || peek() == '.' || peek() == '+' || peek() == ':')) {
      ++i_;
    }
    std::string raw(s_.substr(start, i_ - start));
    if (raw.empty()) fail("expected a value (string, number, true/false, array or table)");
    if (raw.find(':') != std::string::npos ||
        (raw.size() >= 10 && raw[4] == '-' && raw[7] == '-')) {
      fail("dates and times are not supported in engine specs; write them as strings");
    }
    std::string t;
    for (std::size_t k = 0; k < raw.size(); ++k) {
      if (raw[k] == '_') {
        if (k == 0 || k + 1 == raw.size() ||
            !std::isalnum(static_cast<unsigned char>(raw[k - 1])) ||
            !std::isalnum(static_cast<unsigned char>(raw[k + 1]))) {
          fail("'" + raw + "': '_' must sit between digits");
        }
        continue;
      }
      t += raw[k];
    }
    const std::string body = (t[0] == '+' || t[0] == '-') ? t.substr(1) : t;
    const bool negative = t[0] == '-';
    if (body == "inf") {
      return json::value(negative ? -std::numeric_limits<double>::infinity()
                                  : std::numeric_limits<double>::infinity());
    }
    if (body == "nan") return json::value(std::numeric_limits<double>::quiet_NaN());
    try {
      if (body.size() > 2 && body[0] == '0' &&
          (body[1] == 'x' || body[1] == 'o' || body[1] == 'b')) {
        if (t[0] == '+' || t[0] == '-') fail("'" + raw + "': hex/octal/binary take no sign");
        const int base = body[1] == 'x' ? 16 : body[1] == 'o' ? 8 : 2;
        std::size_t used = 0;
        const long long v = std::stoll(body.substr(2), &used, base);
        if (used != body.size() - 2) fail("'" + raw + "' is not a number");
        return json::value(static_cast<std::int64_t>(v));
      }
      const bool is_float = body.find_first_of(".eE") != std::string::npos;
      if (!std::isdigit(static_cast<unsigned char>(body[0]))) {
        fail("'" + raw + "' is not a value; strings need quotes: \"" + raw + "\"");
      }
      if (body.size() > 1 && body[0] == '0' && std::isdigit(static_cast<unsigned char>(body[1]))) {
        fail("'" + raw + "': leading zeros are not allowed");
      }
      std::size_t used = 0;
      if (is_float) {
        const double v = std::stod(t, &used);
        if (used != t.size()) fail("'" + raw + "' is not a number");
        return json::value(v);
      }
      const long long v = std::stoll(t, &used, 10);
      if (used != t.size()) fail("'" + raw + "' is not a number");
      return json::value(static_cast<std::int64_t>(v));
    } catch (const std::out_of_range&) {
      fail("'" + raw + "' is out of range");
    } catch (const std::invalid_argument&) {
      fail("'" + raw + "' is not a value; strings need quotes: \"" + raw + "\"");
    }
  }

  std::string_view s_;
  const std::string& source_;
  std::size_t i_ = 0;
  int line_ = 1;
  TomlDocument doc_;
  std::set<std::string> defined_tables_;
};

}  // namespace

TomlDocument parse_toml(std::string_view text, const std::string& source) {
  return Parser(text, source).run();
}

}  // namespace dyno::engine
