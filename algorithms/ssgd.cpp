// ssgd: synchronous data-parallel SGD.
//   x ← x − η·opt(avg_i g_i)   every step.
// Blocking (default): one all-reduce of the whole gradient after backward.
// --overlap true (wait-free backprop, PyTorch DDP style): layers are grouped into buckets
// of about --bucket-mb MB in backward order (last layer first; a bucket closes once it
// reaches the size, or where two layers are not adjacent in the flat buffer; 0: one bucket
// per layer; the first bucket closes at --first-bucket-mb when given, as PyTorch DDP's first
// bucket closes at 1 MiB). A bucket's non-blocking all-reduce is launched from the backward hook the
// moment its last layer's gradient is final, progressed at later hooks while earlier layers
// still compute, and waited for before the optimizer step; the time in flight is recorded
// as overlap_s. Each element's sum is the same whichever bucket carries it, so the result is
// bit-identical to the blocking all-reduce (on 2 ranks; with more, MPI may pick a reduction
// order by message size).
// Bytes sent per step per worker (ring): 2(n−1)/n · |x|·4.
// --compress KIND: the all-reduce is replaced by the compressor's aggregation
// (algorithms/compress/compressor.hpp), bytes per step by its formula. With --overlap true
// each bucket has its own compressor (its own error feedback; top-k and QSGD's buckets are
// taken within the bucket; seed + bucket index), started from the hook in place of the
// bucket's all-reduce (non-blocking form); before the optimizer, every bucket's next phase
// is launched (advance, PowerSGD's Q all-reduce) and then each is finished, both in launch
// order, the same on every rank. One bucket = blocking --compress bit-identically; bytes per
// step = Σ over buckets of the compressor's bytes per call on the bucket.
#include <cmath>

#include "algorithms/algorithm.hpp"
#include "algorithms/compress/compressor.hpp"
#include "algorithms/config_check.hpp"
#include "algorithms/timing_rules.hpp"
#include "algorithms/variant.hpp"
#include "core/clock.hpp"
#include "workloads/cost_file.hpp"

namespace dsgd {

namespace {

struct Bucket {
  size_t offset = 0;  // in floats, into the flat gradient buffer
  size_t count = 0;
  size_t layers = 0;  // layers in the bucket
  size_t ready = 0;   // layers whose gradient is final this step
};

class Ssgd final : public Algorithm {
 public:
  Ssgd(bool overlap, double bucket_mb, double first_bucket_mb, const std::string& compress, uint64_t seed)
      : overlap_(overlap),
        bucket_bytes_(bucket_mb * 1e6),
        first_bucket_bytes_(first_bucket_mb * 1e6),
        compress_(compress),
        seed_(seed) {
    if (!compress.empty() && !overlap) compressor_ = compressor_create(compress);
  }
  std::string name() const override { return "ssgd"; }
  void setup(TrainState& s) override {
    if (compressor_) compressor_->setup(s.comm, s.workload.layers(), s.count, seed_);
    if (!overlap_) return;
    const auto& layers = s.workload.layers();
    layer_bucket_.assign(layers.size(), 0);
    // Backward order: from the last layer down to the first.
    for (size_t k = layers.size(); k-- > 0;) {
      const LayerView& v = layers[k];
      const bool adjacent = !buckets_.empty() && v.offset + v.count == buckets_.back().offset;
      const bool full =
          !buckets_.empty() && double(buckets_.back().count) * sizeof(float) >=
                                   timing_bucket_cap(buckets_.size() - 1, bucket_bytes_, first_bucket_bytes_);
      if (buckets_.empty() || !adjacent || full) buckets_.push_back(Bucket{v.offset + v.count, 0, 0, 0});
      Bucket& b = buckets_.back();
      b.offset = v.offset;
      b.count += v.count;
      b.layers += 1;
      layer_bucket_[k] = buckets_.size() - 1;
    }
    requests_.assign(buckets_.size(), CollRequest{});
    launch_order_.assign(buckets_.size(), 0);
    if (compress_.empty()) return;
    for (size_t k = 0; k < buckets_.size(); ++k) {
      const Bucket& b = buckets_[k];
      std::vector<LayerView> in_bucket;  // offsets relative to the bucket
      for (const LayerView& v : layers)
        if (v.offset >= b.offset && v.offset + v.count <= b.offset + b.count)
          in_bucket.push_back(LayerView{v.name, v.offset - b.offset, v.count});
      bucket_compressors_.push_back(compressor_create(compress_));
      bucket_compressors_.back()->setup(s.comm, in_bucket, b.count, seed_ + k);
    }
  }
  void on_layer_grad_ready(TrainState& s, size_t layer) override {
    if (!overlap_) return;
    const size_t k = layer_bucket_[layer];
    Bucket& b = buckets_[k];
    if (!bucket_compressors_.empty()) {
      if (++b.ready == b.layers) {
        bucket_compressors_[k]->start(s.comm, s.grad_view().slice(b.offset, b.count).host_f32("ssgd --compress"),
                                      b.count, s.step);
        launch_order_[launched_++] = k;
      }
      for (auto& c : bucket_compressors_) c->progress(s.comm);
      return;
    }
    if (++b.ready == b.layers) {
      s.comm.iallreduce_average(s.grad_view().slice(b.offset, b.count), requests_[k]);
      launch_order_[launched_++] = k;
    }
    for (CollRequest& r : requests_) s.comm.progress(r);
  }
  void reduce_gradients(TrainState& s) override {
    if (!bucket_compressors_.empty()) {
      const double compute_end = s.comm.now();
      for (size_t i = 0; i < launched_; ++i) bucket_compressors_[launch_order_[i]]->advance(s.comm);
      for (size_t i = 0; i < launched_; ++i) bucket_compressors_[launch_order_[i]]->finish(s.comm, compute_end);
      launched_ = 0;
      for (Bucket& b : buckets_) b.ready = 0;
      return;
    }
    if (compressor_) {
      compressor_->allreduce_average(s.comm, s.grad_view().host_f32("ssgd --compress"), s.count, s.step);
      return;
    }
    if (!overlap_) {
      s.comm.allreduce_average(s.grad_view());
      return;
    }
    // In launch order: a request's wait call then marks the end of its time in flight
    // during compute, not time spent blocked on another request.
    const double compute_end = s.comm.now();
    for (size_t i = 0; i < launched_; ++i) s.comm.wait(requests_[launch_order_[i]], compute_end);
    launched_ = 0;
    for (Bucket& b : buckets_) b.ready = 0;
  }
  bool replicas_identical() const override { return true; }
  double bytes_sent_per_step(double param_bytes, int n) const override {
    if (compressor_) return compressor_->bytes_sent_per_call(static_cast<size_t>(param_bytes / sizeof(float)), n);
    if (!compress_.empty()) {  // --overlap: per bucket (0 before setup)
      double bytes = 0;
      for (size_t k = 0; k < bucket_compressors_.size(); ++k)
        bytes += bucket_compressors_[k]->bytes_sent_per_call(buckets_[k].count, n);
      return bytes;
    }
    return ring_allreduce_bytes_sent(param_bytes, n);
  }
  int max_collectives_per_step() const override {
    if (compressor_) return compressor_->collectives_per_call();
    if (!bucket_compressors_.empty()) {
      int total = 0;
      for (const auto& c : bucket_compressors_) total += c->collectives_per_call();
      return total;
    }
    return overlap_ ? static_cast<int>(requests_.size()) : 1;
  }

 private:
  bool overlap_;
  double bucket_bytes_;
  double first_bucket_bytes_;  // the first bucket's (the last layers', launched first); 0: bucket_bytes_
  std::string compress_;
  std::unique_ptr<GradientCompressor> compressor_;                       // blocking --compress
  std::vector<std::unique_ptr<GradientCompressor>> bucket_compressors_;  // --overlap --compress
  uint64_t seed_;
  std::vector<Bucket> buckets_;
  std::vector<size_t> layer_bucket_;   // layer → bucket
  std::vector<CollRequest> requests_;  // one per bucket
  std::vector<size_t> launch_order_;   // buckets in the order their requests were launched
  size_t launched_ = 0;
};

}  // namespace

std::unique_ptr<Algorithm> algorithm_create_ssgd(const RunConfig& cfg) {
  return std::make_unique<Ssgd>(cfg.overlap, cfg.bucket_mb, cfg.first_bucket_mb, cfg.compress, cfg.seed);
}

namespace {

void ssgd_validate(const RunConfig& cfg) {
  if (config_changed(cfg, "broadcast-buffers") && !cost_file_workload(cfg.workload))
    config_fail("broadcast-buffers",
                fmt::format("applies to a cost-file workload (--workload profile:FILE) only (got --workload {}): "
                            "the built-in workloads have no buffers to broadcast",
                            cfg.workload),
                "drop --broadcast-buffers");
  if (config_changed(cfg, "first-bucket-mb") && !cfg.overlap)
    config_fail("first-bucket-mb", "applies to --algo ssgd --overlap true only (got --overlap false)",
                "drop --first-bucket-mb or add --overlap true");
  if (config_changed(cfg, "bucket-mb") && !cfg.overlap)
    config_fail("bucket-mb", "applies to --algo ssgd --overlap true only (got --overlap false)",
                "drop --bucket-mb or add --overlap true");
}

// One gradient all-reduce per step between backward and the update.
// With --overlap: the bucketed non-blocking all-reduces (timing_rules.hpp).
// A cost file's ssgd (PyTorch DDP) first broadcasts the model's buffers from worker 0
// (plan.buffer_broadcast_bytes); the step then starts when the broadcasts end.
void ssgd_timing(const SimTimingPlan& plan, SimTimingState& state, int64_t step, std::vector<double>& clock,
                 SimStepTiming* rows) {
  const auto rule = [&] {
    if (plan.overlap)
      timing_step_buckets(plan, state, step, clock, rows);
    else
      timing_step_allreduce(plan, step, clock, rows, true, false);
  };
  if (plan.buffer_broadcast_bytes.empty()) return rule();
  const std::vector<double> start = clock;  // the step's start, before the broadcasts
  const TimingBroadcasts b = timing_broadcasts_before(plan, plan.buffer_broadcast_bytes, clock);
  rule();
  for (size_t i = 0; i < clock.size(); ++i) {
    rows[i].start = start[i];
    rows[i].step = clock[i] - start[i];
    rows[i].wait += b.arrival - start[i];
    rows[i].comm += b.comm;
    rows[i].bytes += b.sent;
  }
}

}  // namespace

const Variant& variant_ssgd() {
  static const Variant v = [] {
    Variant v;
    v.name = "ssgd";
    v.description = "synchronous SGD: all-reduce of the gradient every step";
    v.knobs = "--overlap, --bucket-mb, --first-bucket-mb, --broadcast-buffers (cost files)";
    v.flags = {{"overlap"},
               {"bucket-mb", "--algo ssgd --overlap true"},
               {"first-bucket-mb", "--algo ssgd --overlap true"},
               {"broadcast-buffers"}};
    v.broadcasts_buffers = true;
    v.validate = ssgd_validate;
    v.create = algorithm_create_ssgd;
    v.timing = ssgd_timing;
    v.timing_plan = [](const RunConfig& cfg, SimTimingPlan& plan) {
      plan.overlap = cfg.overlap;
      plan.bucket_bytes = cfg.bucket_mb * 1e6;
      plan.first_bucket_bytes = cfg.first_bucket_mb * 1e6;
    };
    return v;
  }();
  return v;
}

}  // namespace dsgd
