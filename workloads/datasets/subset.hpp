// A fixed, class-stratified subset of a dataset's rows (text: evenly spaced windows): the
// cheaper evaluation set of `--eval-subset N` (the tuner's trials on deep workloads).
// Deterministic and independent of the seed, so every run of a dataset evaluates on the same
// rows.
#pragma once

#include <cstddef>
#include <vector>

#include "workloads/datasets/dataset.hpp"

namespace dsgd {

// The rows of an n-row subset of `ds` (n < ds.rows), ascending: each class keeps its share of
// the rows (largest remainders round), evenly spaced through the class's rows in file order.
std::vector<size_t> dataset_stratified_rows(const Dataset& ds, size_t n);

// A copy of those rows of `ds` (dense or sparse, images keep their shape). Text (its samples
// are overlapping windows of one token stream): n of the windows an evaluation predicts
// (dataset_eval_windows), evenly spaced through the stream, stored end to end with
// eval_stride = window. Throws InputError for n = 0 and for n at least the rows (windows).
Dataset dataset_stratified_subset(const Dataset& ds, size_t n);

// Text: how many windows an evaluation of `ds` predicts (those starting at multiples of its
// evaluation stride); 0 for a dataset that is not text.
size_t dataset_eval_windows(const Dataset& ds);
// What --eval-subset counts: the rows, or for text the evaluation windows.
size_t dataset_eval_units(const Dataset& ds);

// The half-width of the 95 % confidence interval of an accuracy p measured on n rows (the
// normal approximation of the binomial, 1.96 sqrt(p (1 - p) / n)).
double dataset_accuracy_ci95(double p, size_t n);

}  // namespace dsgd
