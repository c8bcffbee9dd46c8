// The field tables of the stored row types (see row_fields.hpp).
#include "results/row_fields.hpp"

#include <algorithm>
#include <cmath>

namespace dsgd {

const std::vector<RowField<StepRow>>& step_fields() {
  using S = StepRow;
  using F = RowField<StepRow>;
  static const std::vector<F> fields = {
      F{"rank", "", "worker rank", &S::rank}.on_rank_0(),
      {"step", "steps", "step index (0-based)", &S::step},
      F{"timed", "", "1 for timed steps, 0 for warm-up", &S::timed}.on_rank_0(),
      F{"start_s", "s", "step start since the run's time origin (rank 0's clock)", &S::start_s}.on_rank_0(),
      {"step_s", "s", "wall time of the step on this rank", &S::step_s},
      {"data_s", "s", "batch loading", &S::data_s},
      {"fwd_s", "s", "forward pass", &S::fwd_s},
      {"bwd_s", "s", "backward pass", &S::bwd_s},
      {"opt_s", "s", "optimizer update", &S::opt_s},
      F{"comm_s", "s", "blocked while data moves", &S::comm_s}.on_rank_0(),
      F{"wait_s", "s", "blocked waiting for the last rank", &S::wait_s}.on_rank_0(),
      F{"overlap_s", "s", "communication in flight during compute", &S::overlap_s}.on_rank_0(),
      F{"injected_s", "s", "injected straggler delay", &S::injected_s}.since(3).null_zero(),
      F{"bytes_sent", "bytes", "bytes this rank sent in the step", &S::bytes_sent}.on_rank_0(),
      {"train_loss", "", "this rank's minibatch loss", &S::train_loss},
      F{"staleness", "updates", "mean staleness of this rank's updates in the step; null: none", &S::staleness}.since(
          6),
  };
  return fields;
}

const std::vector<RowField<EvalRow>>& eval_fields() {
  using E = EvalRow;
  using F = RowField<EvalRow>;
  static const std::vector<F> fields = {
      {"step", "steps", "steps completed at the evaluation", &E::step},
      {"time_s", "s", "training wall-clock (evaluations excluded)", &E::time_s},
      {"train_loss", "", "mean minibatch loss since the previous evaluation", &E::train_loss},
      {"test_loss", "", "test loss of the consensus model", &E::test_loss},
      {"test_acc", "1", "test accuracy of the consensus model (fraction)", &E::test_acc},
      F{"consensus_distance", "", "mean squared distance of the replicas to their average; null: identical",
        &E::consensus_distance}
          .since(4)
          .report(false),
      F{"eval_s", "s", "wall time of the evaluation on rank 0 (excluded from time_s); null before schema v11",
        &E::eval_s}
          .since(11),
  };
  return fields;
}

namespace {

std::optional<double> overlap_pct(const Summary& s) {
  const double hidden = s.overlap_s + s.comm_s;
  if (!(hidden > 0)) return std::nullopt;
  return 100.0 * s.overlap_s / hidden;
}

}  // namespace

const std::vector<RowField<Summary>>& summary_fields() {
  using S = Summary;
  using F = RowField<Summary>;
  static const std::vector<F> fields = {
      F{"throughput_samples_per_s", "samples/s",
        "workers x batch x timed_steps / sum over steps of the slowest rank's step_s", &S::throughput_samples_per_s}
          .since(2)
          .print("throughput", "{:>12.1f} samples/s"),
      F{"step_time_s", "s", "mean step_s over timed (rank, step) rows", &S::step_time_s}.since(2).print_step("step"),
      F{"step_time_se_s", "s",
        "standard error of step_time_s by batch means (the timed steps in order, in floor(sqrt(n)) batches); "
        "null: under 4 timed steps",
        &S::step_time_se_s}
          .since(19)
          .print("step's error", "+-{:.4f} ms (standard error of the mean step, by batch means)", 1e3),
      F{"compute_s", "s", "fwd_s + bwd_s + opt_s", &S::compute_s}.since(2).print_step("  compute (fwd+bwd+opt)"),
      F{"fwd_s", "s", "mean forward time per step", &S::fwd_s}.since(2).print_step("    forward"),
      F{"bwd_s", "s", "mean backward time per step", &S::bwd_s}.since(2).print_step("    backward"),
      F{"opt_s", "s", "mean optimizer time per step", &S::opt_s}.since(2).print_step("    optimizer"),
      F{"data_s", "s", "mean batch-loading time per step", &S::data_s}.since(2).print_step("  data"),
      F{"comm_s", "s", "mean time blocked while data moves, per step", &S::comm_s}.since(2).print_step("  comm"),
      F{"wait_s", "s", "mean time waiting for the last rank, per step", &S::wait_s}.since(2).print_step("  wait"),
      F{"overlap_s", "s", "mean communication in flight during compute, per step", &S::overlap_s}.since(2).print_step(
          "  overlap (hidden comm)"),
      F{"overlap_pct", "%", "100 x overlap_s / (overlap_s + comm_s); null when both are 0", {}}.derive(overlap_pct),
      F{"injected_s", "s", "mean injected straggler delay per step", &S::injected_s}.since(3).null_zero().print_step(
          "  injected (straggler)", true),
      F{"bytes_sent_per_step", "bytes", "mean bytes sent per worker per step", &S::bytes_sent_per_step}.since(2).print(
          "bytes sent", "{:>12.3f} MB per step per worker", 1e-6),
      F{"timed_steps", "steps", "distinct timed steps", &S::timed_steps}.since(2).print("throughput",
                                                                                        "over {} timed steps"),
      F{"final_train_loss", "", "last evaluation's training loss", &S::final_train_loss}.since(2).print(
          "final", "train_loss {:.4f}"),
      F{"final_test_loss", "", "last evaluation's test loss", &S::final_test_loss}.since(2).print("final",
                                                                                                  "test_loss {:.4f}"),
      F{"final_test_acc", "1", "last evaluation's test accuracy (fraction)", &S::final_test_acc}.since(2).print(
          "final", "test_acc {:.4f}"),
      F{"time_to_target_s", "s", "training time of the first evaluation at the target", &S::time_to_target_s}.since(2),
      F{"steps_to_target", "steps", "step of that evaluation", &S::steps_to_target}.since(2),
      F{"staleness_mean", "updates",
        "mean staleness of the applied (ps) or read (adpsgd) updates over timed steps; null: none", &S::staleness_mean}
          .since(6)
          .print("staleness", "mean {:.3f}"),
      F{"staleness_max", "updates", "largest per-step staleness over timed steps", &S::staleness_max}.since(6).print(
          "staleness", "max {:.3f} updates per applied/read update"),
      F{"model_gflops", "GFLOP/s",
        "flops_per_sample x throughput / workers: model FLOP/s achieved per worker over the whole step",
        &S::model_gflops}
          .since(7)
          .print("MFU", "{:.2f} model GFLOP/s per worker"),
      F{"peak_gflops", "GFLOP/s",
        "SGEMM peak per worker: the best this database has measured on the host at the run's --threads",
        &S::peak_gflops}
          .since(7)
          .print("MFU", "of a {:.1f} GFLOP/s SGEMM peak"),
      F{"mfu", "1", "model_gflops / peak_gflops (fraction); null without a FLOP count or peak", &S::mfu}.since(7).print(
          "MFU", "= {:.1f} %", 100),
      F{"eval_total_s", "s", "wall time of the run's evaluations on rank 0 (sum of evals.eval_s); not in time_s",
        &S::eval_total_s}
          .since(14)
          .print("evaluations", "{:.3f} s (not in the training time)"),
      F{"host_load", "1",
        "1-minute load average at the run's end beyond the run's own processes, per core; null: unknown", &S::host_load}
          .since(17)
          .print("host", "load {:.2f} per core beyond the run at its end"),
      F{"cpu_steal", "1", "fraction of the host's CPU time stolen by the hypervisor during the run; null: unknown",
        &S::cpu_steal}
          .since(17)
          .print("host", "CPU steal {:.1f} %", 100),
      F{"model_pass_s", "s",
        "one elementwise pass over the parameters (copy; y += a*x), timed in the warm-up steps after the update; "
        "null: not measured",
        &S::model_pass_s}
          .since(18)
          .print("model pass", "{:.1f} us (timed in the warm-up)", 1e6),
  };
  return fields;
}

namespace {

template <class Row>
void stored_columns_add(std::vector<StoredColumn>& out, const char* table, const std::vector<RowField<Row>>& fields) {
  for (const RowField<Row>& f : fields) {
    if (!f.stored()) continue;
    const bool integer = std::visit(
        [](auto member) {
          using M = std::decay_t<decltype(std::declval<Row>().*member)>;
          return std::is_integral_v<M> || std::is_same_v<M, std::optional<int64_t>>;
        },
        f.member);
    out.push_back(StoredColumn{table, f.column, integer ? "INTEGER" : "REAL", f.since_version});
  }
}

}  // namespace

std::vector<StoredColumn> row_fields_stored_columns() {
  std::vector<StoredColumn> columns;
  stored_columns_add(columns, "steps", step_fields());
  stored_columns_add(columns, "evals", eval_fields());
  stored_columns_add(columns, "summaries", summary_fields());
  return columns;
}

int row_fields_newest_version() {
  int newest = 0;
  for (const StoredColumn& c : row_fields_stored_columns()) newest = std::max(newest, c.since_version);
  return newest;
}

// ---- step wire format ------------------------------------------------------------------------

namespace {

const std::vector<const RowField<StepRow>*>& step_wire_table() {
  static const std::vector<const RowField<StepRow>*> table = [] {
    std::vector<const RowField<StepRow>*> t;
    for (const RowField<StepRow>& f : step_fields())
      if (f.gathered && f.stored()) t.push_back(&f);
    return t;
  }();
  return table;
}

}  // namespace

size_t step_wire_fields() {
  return step_wire_table().size();
}

void step_wire_pack(const StepRow& row, double* out) {
  for (const RowField<StepRow>* f : step_wire_table()) *out++ = row_field_value(*f, row).value_or(std::nan(""));
}

void step_wire_unpack(const double* in, StepRow& row) {
  for (const RowField<StepRow>* f : step_wire_table()) {
    const double v = *in++;
    std::visit(
        [&](auto member) {
          using M = std::decay_t<decltype(row.*member)>;
          if constexpr (std::is_same_v<M, std::optional<double>>) {
            row.*member = std::isnan(v) ? std::nullopt : std::optional<double>(v);
          } else if constexpr (std::is_same_v<M, std::optional<int64_t>>) {
            row.*member = std::isnan(v) ? std::nullopt : std::optional<int64_t>(static_cast<int64_t>(v));
          } else if constexpr (std::is_same_v<M, bool>) {
            row.*member = v != 0;
          } else {
            row.*member = static_cast<M>(v);
          }
        },
        f->member);
  }
}

}  // namespace dsgd
