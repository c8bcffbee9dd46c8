// A fixed, class-stratified subset of a dataset's rows: the cheaper evaluation set of
// `--eval-subset N` (the tuner's early trials on deep workloads). Deterministic and
// independent of the seed, so every run of a dataset evaluates on the same rows.
#pragma once

#include <cstddef>
#include <vector>

#include "workloads/datasets/dataset.hpp"

namespace dsgd {

// The rows of an n-row subset of `ds` (n < ds.rows), ascending: each class keeps its share of
// the rows (largest remainders round), evenly spaced through the class's rows in file order.
std::vector<size_t> dataset_stratified_rows(const Dataset& ds, size_t n);

// A copy of those rows of `ds` (dense or sparse, images keep their shape). Throws InputError
// for a text dataset (its samples are overlapping windows of one token stream) and for
// n = 0 or n >= ds.rows.
Dataset dataset_stratified_subset(const Dataset& ds, size_t n);

// The half-width of the 95 % confidence interval of an accuracy p measured on n rows (the
// normal approximation of the binomial, 1.96 sqrt(p (1 - p) / n)).
double dataset_accuracy_ci95(double p, size_t n);

}  // namespace dsgd
