// What the board's charts look up in a board (board_charts.cpp): an arm's style and legend
// name, the models and protocols, a cell's label, the cells a predicate holds for and the runs
// behind them in a caption. Internal to dyno_report.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "compare/board.h"

namespace dyno::report::board_lookup {

/// The arm's style: its index in the board.
std::size_t arm_style(const compare::Board& b, const std::string& arm);
/// The arm's name in a legend ("(baseline)" after the baseline's).
std::string arm_name(const compare::Board& b, const std::string& arm);
/// Models in board cell order.
std::vector<std::string> models_of(const compare::Board& b);
std::size_t protocol_count(const compare::Board& b);
/// A cell as a panel title or a heatmap column: c=4, 2.5/s, else (ladder cells, cells
/// without a level) the cell's name (decode@8000, prefill@512), with its protocol when the
/// board has several.
std::string cell_label(const compare::Board& b, const compare::Cell& c);
/// The selected runs behind some cells: listed when few, else counted with the arms'
/// selectors (board.json lists every cell's runs).
std::string runs_phrase(const compare::Board& b, const std::vector<const compare::Cell*>& cells);
/// The board's cells that `f` holds for, in board order.
std::vector<const compare::Cell*> cells_where(const compare::Board& b,
                                              const std::function<bool(const compare::Cell&)>& f);

}  // namespace dyno::report::board_lookup
