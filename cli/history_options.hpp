// The options `history` and `track` share: which series (--metric, --case, --machine) and the
// change-point detector's parameters (cli/history.cpp).
#pragma once

#include <CLI/CLI.hpp>

#include "results/history.hpp"

namespace dsgd {

void history_add_options(CLI::App& sub, HistoryOptions& h);

}  // namespace dsgd
