// The human-readable report of a board as a Document (README.md, report.html, console).
#pragma once

#include <vector>

#include "compare/board.h"
#include "report/document.h"
#include "report/figure.h"

namespace dyno::report {

enum class DocumentKind {
  kFull,     ///< README.md and report.html: every section
  kConsole,  ///< `dyno compare`: status, at a glance, service throughput, findings
};

/// Sections: status, at a glance, service throughput, prefill, latency and jitter, quality
/// audit, GPU operating figures, energy, repetitions (when any), methodology (generated from
/// the records), findings, unpaired runs (when any), files. Figures are placed in the section
/// they name.
Document board_document(const compare::Board& board, const std::vector<Figure>& figures,
                        DocumentKind kind);

}  // namespace dyno::report
