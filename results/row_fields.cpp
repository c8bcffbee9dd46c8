// The field tables of the stored row types (see row_fields.hpp).
#include "results/row_fields.hpp"

namespace dsgd {

const std::vector<RowField<StepRow>>& step_fields() {
  using S = StepRow;
  static const std::vector<RowField<StepRow>> fields = {
      {"rank", "", "worker rank", &S::rank},
      {"step", "steps", "step index (0-based)", &S::step},
      {"timed", "", "1 for timed steps, 0 for warm-up", &S::timed},
      {"start_s", "s", "step start since the run's time origin (rank 0's clock)", &S::start_s},
      {"step_s", "s", "wall time of the step on this rank", &S::step_s},
      {"data_s", "s", "batch loading", &S::data_s},
      {"fwd_s", "s", "forward pass", &S::fwd_s},
      {"bwd_s", "s", "backward pass", &S::bwd_s},
      {"opt_s", "s", "optimizer update", &S::opt_s},
      {"comm_s", "s", "blocked while data moves", &S::comm_s},
      {"wait_s", "s", "blocked waiting for the last rank", &S::wait_s},
      {"overlap_s", "s", "communication in flight during compute", &S::overlap_s},
      {"injected_s", "s", "injected straggler delay", &S::injected_s, 3, true, true},
      {"bytes_sent", "bytes", "bytes this rank sent in the step", &S::bytes_sent},
      {"train_loss", "", "this rank's minibatch loss", &S::train_loss},
      {"staleness", "updates", "mean staleness of this rank's updates in the step; null: none", &S::staleness, 6},
  };
  return fields;
}

const std::vector<RowField<EvalRow>>& eval_fields() {
  using E = EvalRow;
  static const std::vector<RowField<EvalRow>> fields = {
      {"step", "steps", "steps completed at the evaluation", &E::step},
      {"time_s", "s", "training wall-clock (evaluations excluded)", &E::time_s},
      {"train_loss", "", "mean minibatch loss since the previous evaluation", &E::train_loss},
      {"test_loss", "", "test loss of the consensus model", &E::test_loss},
      {"test_acc", "1", "test accuracy of the consensus model (fraction)", &E::test_acc},
      {"consensus_distance", "", "mean squared distance of the replicas to their average; null: identical",
       &E::consensus_distance, 4, false},
      {"eval_s", "s", "wall time of the evaluation on rank 0 (excluded from time_s); null before schema v11",
       &E::eval_s, 11},
  };
  return fields;
}

}  // namespace dsgd
