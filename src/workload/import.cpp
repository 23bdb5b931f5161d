#include "workload/import.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <utility>

#include "json/json_text.h"
#include "workload/csv.h"
#include "workload/import_util.h"
#include "workload/seeded_text.h"

namespace dyno::workload {

namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

using import_util::add_unique;
using import_util::finish;
using import_util::parse_json;
using import_util::read_all;

// ----------------------------------------------------------------------------------------------
// Tables: CSV, JSONL, JSON array

/// One cell: CSV text, or a JSON value.
struct Cell {
  bool is_json = false;
  std::string text;
  json::value value;
};

struct Record {
  std::string where;  ///< "<file>:<line>" or "<file>: element <i>"
  std::vector<std::pair<std::string, Cell>> cells;

  const Cell* find(const std::string& name) const {
    for (const auto& [k, c] : cells) {
      if (k == name) return &c;
    }
    return nullptr;
  }
  std::string keys() const {
    std::string out;
    for (const auto& [k, c] : cells) out += (out.empty() ? "" : ", ") + k;
    return out;
  }
};

struct Table {
  bool is_csv = false;
  std::vector<std::string> header;  ///< CSV only
  std::vector<Record> rows;
};

std::string pick_format(const fs::path& path, const std::string& format) {
  if (!format.empty()) {
    if (format != "csv" && format != "jsonl" && format != "json") {
      throw StreamError(path.string() + ": unknown table format \"" + format +
                        "\"; use csv, jsonl or json");
    }
    return format;
  }
  const std::string ext = path.extension().string();
  if (ext == ".csv" || ext == ".CSV") return "csv";
  if (ext == ".json" || ext == ".JSON") return "json";
  return "jsonl";
}

Table load_table(const fs::path& path, const std::string& format_option) {
  const std::string name = path.string();
  const std::string format = pick_format(path, format_option);
  const std::string text = read_all(path, "table");
  Table table;
  if (format == "csv") {
    table.is_csv = true;
    auto records = parse_csv(text, [&](std::size_t line, const std::string& what) {
      throw StreamError(name + ":" + std::to_string(line) + ": " + what);
    });
    if (records.empty()) throw StreamError(name + ": empty CSV; the first row must be a header");
    table.header = std::move(records[0].second);
    std::set<std::string> seen;
    for (const std::string& h : table.header) {
      if (!seen.insert(h).second) {
        throw StreamError(name + ":" + std::to_string(records[0].first) + ": header names \"" + h +
                          "\" twice");
      }
    }
    for (std::size_t r = 1; r < records.size(); ++r) {
      auto& [line, fields] = records[r];
      const std::string where = name + ":" + std::to_string(line);
      if (fields.size() != table.header.size()) {
        throw StreamError(where + ": " + std::to_string(fields.size()) +
                          " fields, but the header has " + std::to_string(table.header.size()));
      }
      Record rec;
      rec.where = where;
      for (std::size_t c = 0; c < fields.size(); ++c) {
        Cell cell;
        cell.text = std::move(fields[c]);
        rec.cells.emplace_back(table.header[c], std::move(cell));
      }
      table.rows.push_back(std::move(rec));
    }
    return table;
  }
  const auto add_object = [&](const json::value& v, const std::string& where) {
    if (!v.is_object()) throw StreamError(where + ": expected a JSON object");
    Record rec;
    rec.where = where;
    for (const auto& kv : v.get_object()) {
      Cell cell;
      cell.is_json = true;
      cell.value = kv.value();
      rec.cells.emplace_back(std::string(kv.key()), std::move(cell));
    }
    table.rows.push_back(std::move(rec));
  };
  if (format == "json") {
    const json::value root = parse_json(text, name);
    if (!root.is_array()) throw StreamError(name + ": expected a JSON array of objects");
    const json::array& arr = root.get_array();
    for (std::size_t i = 0; i < arr.size(); ++i) {
      add_object(arr[i], name + ": element " + std::to_string(i));
    }
    return table;
  }
  std::size_t line_no = 0;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    const std::string where = name + ":" + std::to_string(line_no);
    add_object(parse_json(line, where), where);
  }
  return table;
}

/// The text of a cell: CSV text; JSON strings as is, numbers/booleans as JSON text, null as "".
/// `single_array`: an array of exactly one scalar stands for that scalar.
std::string cell_text(const Cell& cell, const std::string& where, const std::string& column,
                      bool single_array = false) {
  if (!cell.is_json) return cell.text;
  const json::value* v = &cell.value;
  if (single_array && v->is_array() && v->get_array().size() == 1) v = &v->get_array()[0];
  switch (v->kind()) {
    case json::kind::string:
      return std::string(v->get_string());
    case json::kind::null:
      return "";
    case json::kind::bool_:
    case json::kind::int64:
    case json::kind::uint64:
    case json::kind::double_:
      return json_text::compact(*v);
    case json::kind::array:
    case json::kind::object:
      break;
  }
  throw StreamError(where + ": column `" + column + "` holds an " +
                    (v->is_array() ? "array" : "object") + "; a string or number is needed");
}

/// The cell of `column`, or an error naming it and the available columns.
const Cell& require(const Table& table, const Record& row, const std::string& column,
                    const char* role) {
  const Cell* cell = row.find(column);
  if (cell == nullptr) {
    std::string available;
    if (table.is_csv) {
      for (const std::string& h : table.header) available += (available.empty() ? "" : ", ") + h;
    } else {
      available = row.keys();
    }
    throw StreamError(row.where + ": column `" + column + "` (" + role +
                      ") not found; available: " + (available.empty() ? "(none)" : available));
  }
  return *cell;
}

std::int64_t parse_positive(const std::string& s, const std::string& where,
                            const std::string& column) {
  std::size_t used = 0;
  long long n = 0;
  try {
    n = std::stoll(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != s.size() || n < 1) {
    throw StreamError(where + ": column `" + column + "`: \"" + s +
                      "\" is not an integer >= 1 (max_tokens)");
  }
  return static_cast<std::int64_t>(n);
}

fs::path data_file_in(const fs::path& dir_or_file) {
  std::error_code ec;
  if (!fs::is_directory(dir_or_file, ec)) return dir_or_file;
  std::vector<fs::path> candidates;
  for (const auto& entry : fs::directory_iterator(dir_or_file, ec)) {
    const std::string ext = entry.path().extension().string();
    if (entry.is_regular_file() && (ext == ".jsonl" || ext == ".csv" || ext == ".json")) {
      candidates.push_back(entry.path());
    }
  }
  if (ec)
    throw StreamError(dir_or_file.string() + ": cannot list directory (" + ec.message() + ")");
  std::sort(candidates.begin(), candidates.end());
  if (candidates.size() != 1) {
    std::string names;
    for (const fs::path& p : candidates)
      names += (names.empty() ? "" : ", ") + p.filename().string();
    throw StreamError(dir_or_file.string() +
                      ": expected exactly one .jsonl, .csv or .json file, found " +
                      std::to_string(candidates.size()) +
                      (names.empty() ? "" : " (" + names + ")") + "; name the file");
  }
  return candidates[0];
}

}  // namespace

// ----------------------------------------------------------------------------------------------

RequestStream stream_from_sharegpt(const fs::path& path, const ShareGptOptions& options) {
  const std::string name = path.string();
  if (options.max_tokens < 1) throw StreamError(name + ": max_tokens must be >= 1");
  const json::value root = parse_json(read_all(path, "ShareGPT file"), name);
  if (!root.is_array()) {
    throw StreamError(name + ": expected a JSON array of {id, conversations} (ShareGPT)");
  }
  const json::array& arr = root.get_array();
  struct Item {
    Request request;
    std::string where;
  };
  std::vector<Item> items;
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const std::string where = name + ": element " + std::to_string(i);
    if (!arr[i].is_object()) throw StreamError(where + ": expected an object {id, conversations}");
    const json::object& obj = arr[i].get_object();
    std::string id = std::to_string(i);
    if (const json::value* v = obj.if_contains("id")) {
      if (v->is_string()) {
        id = std::string(v->get_string());
      } else if (v->is_int64() || v->is_uint64()) {
        id = json_text::compact(*v);
      } else {
        throw StreamError(where + ": key `id` must be a string or an integer");
      }
      if (id.empty()) throw StreamError(where + ": key `id` is empty");
    }
    const json::value* conv = obj.if_contains("conversations");
    if (conv == nullptr || !conv->is_array()) {
      throw StreamError(where + ": key `conversations` missing or not an array");
    }
    const json::array& turns = conv->get_array();
    std::optional<std::string> system;
    std::optional<std::string> user;
    std::optional<std::string> reply;
    for (std::size_t t = 0; t < turns.size(); ++t) {
      using Role = import_util::ShareGptTurn::Role;
      const import_util::ShareGptTurn turn = import_util::read_sharegpt_turn(turns, t, where);
      const std::string& text = turn.text;
      const bool is_user = turn.role == Role::kUser;
      const bool is_reply = turn.role == Role::kReply;
      if (user) {
        if (is_reply) reply = text;
        break;
      }
      if (turn.role == Role::kSystem) system = text;
      if (is_user) user = text;
    }
    if (!user) continue;
    if (user->size() < options.min_prompt_chars) continue;
    Request r;
    r.id = "sharegpt-" + id;
    if (options.api == Api::kChat) {
      if (system) r.messages.push_back({"system", *system});
      r.messages.push_back({"user", *user});
    } else {
      r.prompt = system ? *system + "\n\n" + *user : *user;
    }
    if (options.output_from_reference) {
      if (!reply) continue;
      r.sampling.max_tokens = import_util::reply_max_tokens(*reply);
    } else {
      r.sampling.max_tokens = options.max_tokens;
    }
    items.push_back({std::move(r), where});
  }
  if (options.shuffle) import_util::seeded_shuffle(items, options.seed);
  if (options.limit && items.size() > *options.limit) items.resize(*options.limit);
  RequestStream stream;
  std::map<std::string, std::string> seen;
  for (Item& item : items) add_unique(stream, seen, std::move(item.request), item.where);
  finish(stream, "sharegpt", path);
  return stream;
}

RequestStream stream_from_table(const fs::path& path, const TableMapping& m) {
  const std::string name = path.string();
  if (m.prompt.empty()) throw StreamError(name + ": the mapping must name the prompt column");
  if (m.max_tokens && !m.max_tokens_column.empty()) {
    throw StreamError(name + ": give a max_tokens column or a fixed max_tokens, not both");
  }
  if (m.max_tokens && *m.max_tokens < 1) throw StreamError(name + ": max_tokens must be >= 1");
  if (m.api == Api::kCompletions && (!m.image.empty() || !m.system.empty())) {
    throw StreamError(name +
                      ": the completions API takes a prompt only; image and system "
                      "columns need the chat API");
  }
  const bool has_scorer =
      !m.scorer.empty() || !m.scorer_pattern.empty() || !m.scorer_choices.empty();
  if (has_scorer && m.expected.empty()) {
    throw StreamError(name + ": a scorer needs an expected-answer column");
  }
  const Table table = load_table(path, m.format);
  const fs::path base = path.parent_path();
  RequestStream stream;
  std::map<std::string, std::string> seen;
  for (std::size_t n = 0; n < table.rows.size(); ++n) {
    const Record& row = table.rows[n];
    const auto text_of = [&](const std::string& column, const char* role) {
      return cell_text(require(table, row, column, role), row.where, column);
    };
    Request r;
    r.id = m.id.empty() ? "row-" + std::to_string(n + 1) : text_of(m.id, "id");
    if (r.id.empty()) throw StreamError(row.where + ": column `" + m.id + "` (id) is empty");
    const std::string prompt = text_of(m.prompt, "prompt");
    if (prompt.empty())
      throw StreamError(row.where + ": column `" + m.prompt + "` (prompt) is empty");
    if (m.api == Api::kCompletions) {
      r.prompt = prompt;
    } else {
      if (!m.system.empty()) {
        const std::string system = text_of(m.system, "system");
        if (!system.empty()) r.messages.push_back({"system", system});
      }
      Message user{"user", prompt};
      if (!m.image.empty()) {
        const std::string image = text_of(m.image, "image");
        if (!image.empty()) {
          fs::path file(image);
          if (file.is_relative()) file = base / file;
          ContentPart text;
          text.text = prompt;
          user.content.clear();
          user.parts = {image_part_from_file(file, row.where, m.image), std::move(text)};
        }
      }
      r.messages.push_back(std::move(user));
    }
    if (!m.max_tokens_column.empty()) {
      r.sampling.max_tokens = parse_positive(text_of(m.max_tokens_column, "max_tokens"), row.where,
                                             m.max_tokens_column);
    } else if (m.max_tokens) {
      r.sampling.max_tokens = *m.max_tokens;
    }
    if (!m.expected.empty()) {
      Expectation e;
      e.answer = text_of(m.expected, "expected");
      if (e.answer.empty()) {
        throw StreamError(row.where + ": column `" + m.expected + "` (expected) is empty");
      }
      if (!m.scorer.empty()) e.scorer = m.scorer;
      e.pattern = m.scorer_pattern;
      e.choices = m.scorer_choices;
      validate_expectation(e, row.where, "scorer");
      r.expected = std::move(e);
    }
    for (const std::string& tag : m.tags) r.tags[tag] = text_of(tag, "tag");
    add_unique(stream, seen, std::move(r), row.where);
  }
  finish(stream, "table", path);
  return stream;
}

RequestStream stream_from_image_qa(const fs::path& dir_or_file, const ImageQaOptions& options) {
  const fs::path path = data_file_in(dir_or_file);
  if (options.max_tokens && *options.max_tokens < 1) {
    throw StreamError(path.string() + ": max_tokens must be >= 1");
  }
  const Table table = load_table(path, options.format);
  fs::path image_dir = path.parent_path();
  if (!options.image_dir.empty()) {
    image_dir = options.image_dir.is_absolute() ? options.image_dir : image_dir / options.image_dir;
  }
  const std::string stem = path.stem().string();
  RequestStream stream;
  std::map<std::string, std::string> seen;
  for (std::size_t i = 0; i < table.rows.size(); ++i) {
    if (options.limit && i >= *options.limit) break;
    const Record& row = table.rows[i];
    const auto column = [&](const std::string& chosen, const char* first, const char* second,
                            const char* role) -> std::string {
      if (!chosen.empty()) {
        require(table, row, chosen, role);
        return chosen;
      }
      if (row.find(first) != nullptr) return first;
      require(table, row, second, role);
      return second;
    };
    const std::string image_col = column(options.image_key, "image", "imgname", "image");
    const std::string question_col = column(options.question_key, "query", "question", "question");
    const std::string answer_col = column(options.answer_key, "label", "answer", "answer");
    const std::string image = cell_text(*row.find(image_col), row.where, image_col);
    if (image.empty())
      throw StreamError(row.where + ": column `" + image_col + "` (image) is empty");
    std::string question = cell_text(*row.find(question_col), row.where, question_col);
    const std::string answer = cell_text(*row.find(answer_col), row.where, answer_col, true);
    if (answer.empty())
      throw StreamError(row.where + ": column `" + answer_col + "` (answer) is empty");
    if (!options.instruction.empty()) question += " " + options.instruction;
    fs::path file(image);
    if (file.is_relative()) file = image_dir / file;
    Request r;
    r.id = stem + "-" + std::to_string(i);
    Message user{"user", ""};
    ContentPart text;
    text.text = std::move(question);
    user.parts = {image_part_from_file(file, row.where, image_col), std::move(text)};
    r.messages.push_back(std::move(user));
    if (options.max_tokens) r.sampling.max_tokens = *options.max_tokens;
    Expectation e;
    e.answer = answer;
    e.scorer = options.scorer;
    validate_expectation(e, row.where, "scorer");
    r.expected = std::move(e);
    add_unique(stream, seen, std::move(r), row.where);
  }
  finish(stream, "image-qa", path);
  return stream;
}

}  // namespace dyno::workload
