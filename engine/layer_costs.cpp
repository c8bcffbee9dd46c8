// See layer_costs.hpp.
#include "engine/layer_costs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "cluster/backends.hpp"
#include "core/clock.hpp"
#include "core/errors.hpp"
#include "core/stats.hpp"
#include "core/system_info.hpp"
#include "engine/calibration.hpp"
#include "engine/peak_flops.hpp"
#include "engine/sim_run.hpp"

namespace dsgd {

namespace {

enum NetKind : int { net_free = 0, net_emulated = 1, net_calibrated = 2, net_probe = 3 };

// Rank 0: the per-layer compute costs into msg[4..] (profile, else a FLOP estimate); returns
// where they came from.
std::string compute_costs_rank0(const RunConfig& cfg, const Store* store, const Workload& workload,
                                std::vector<double>& msg) {
  const auto& layers = workload.layers();
  const size_t nl = layers.size();
  try {
    const SimProfile p = sim_profile_resolve(cfg, store, system_info_read().host, layers);
    msg[4] = p.cost.fwd_s * cfg.compute_scale;
    for (size_t l = 0; l < nl; ++l) msg[5 + l] = p.cost.bwd_layer_s[l] * cfg.compute_scale;
    return fmt::format("profile from {}{}", p.source,
                       cfg.compute_scale != 1.0 ? fmt::format(" x {}", cfg.compute_scale) : "");
  } catch (const InputError& e) {
    const double rate = sgemm_flops_measure(256, 5);  // a quick estimate, not the MFU peak
    const double flops = workload.flops_per_sample() * static_cast<double>(cfg.batch);
    double total = 0;
    for (const LayerView& v : layers) total += static_cast<double>(v.count);
    msg[4] = flops / 3.0 / rate;
    for (size_t l = 0; l < nl; ++l)
      msg[5 + l] = total > 0 ? 2.0 * flops / 3.0 / rate * static_cast<double>(layers[l].count) / total : 0.0;
    return fmt::format(
        "ESTIMATE (no compute profile: {}): {:.3g} FLOP/sample x batch {} at {:.1f} GFLOP/s (sgemm measured now), "
        "2/3 backward, split over layers by parameter count; run `dsgd-bench calibrate` for measured times",
        e.what(), workload.flops_per_sample(), cfg.batch, rate / 1e9);
  }
}

// Rank 0: which network the costs use, into msg[0..3] (kind, calibration id, alpha, bus bandwidth).
void network_kind_rank0(const RunConfig& cfg, const Store* store, int n, bool emulated, std::vector<double>& msg) {
  if (n <= 1) {
    msg[0] = net_free;
  } else if (emulated) {
    msg[0] = net_emulated;
  } else {
    // A backend that models the network (sim) without a given link has a free one.
    msg[0] = backend_get(cfg.backend).has(cap_models_network) ? net_free : net_probe;
    if (const std::optional<AllreduceFit> fit =
            store ? store->allreduce_fit_latest(system_info_read().host) : std::nullopt) {
      msg[0] = net_calibrated;
      msg[1] = static_cast<double>(fit->calibration_id);
      msg[2] = fit->alpha_s;
      msg[3] = fit->bandwidth_bytes_per_s;
    }
  }
}

// Every rank: the native fabric probed now: a two-point calibration sweep (engine/calibration.hpp)
// of the bare all-reduce at 1 float and the largest layer, 5 repetitions of >= 1 ms, fitted as
// alpha and bus bandwidth.
void network_probe(Communicator& comm, const std::vector<LayerView>& layers, LayerCosts& costs) {
  const int n = comm.size();
  size_t largest = 2;
  for (const LayerView& v : layers) largest = std::max(largest, v.count);
  CalibrationSweepPlan plan;
  plan.sizes = {static_cast<int64_t>(sizeof(float)), static_cast<int64_t>(largest * sizeof(float))};
  plan.reps = 5;
  plan.min_rep_time_s = 1e-3;
  plan.estimate_time_s = 2e-4;
  plan.ops = {"allreduce_mpi"};
  CalibrationObserver quiet;
  const std::vector<CalibrationFit> fits = calibration_fits(calibration_sweep(plan, comm, quiet), n);
  const double alpha = fits.empty() ? 0.0 : fits.front().row.alpha_s;
  const double bus = fits.empty() ? INFINITY : fits.front().row.bandwidth_bytes_per_s;
  costs.network = NetworkModel{network_link_from_allreduce_fit(alpha, bus, n), std::nullopt, 1};
  costs.algo = CollAlgo::algo_ring;
  costs.network_source = fmt::format(
      "native fabric, no calibration: all-reduce probed now (1 and {} floats: alpha {:.3g} s, bus {:.3g} GB/s; "
      "ring); run `dsgd-bench calibrate` for a measured fit",
      largest, alpha, bus / 1e9);
}

}  // namespace

LayerCosts layer_costs_resolve(const RunConfig& cfg, Communicator& comm, const Store* store, const Workload& workload,
                               const std::optional<NetworkModel>& emulated, int groups) {
  const int n = comm.size();
  LayerCosts costs;
  // Broadcast layout: [net kind, calibration id, alpha, bus bandwidth, fwd, bwd_0 .. bwd_{L−1}].
  std::vector<double> msg(5 + workload.layers().size(), 0.0);
  if (comm.rank() == 0) {
    costs.compute_source = compute_costs_rank0(cfg, store, workload, msg);
    network_kind_rank0(cfg, store, n, emulated.has_value(), msg);
  }
  comm.untimed_broadcast(msg.data(), msg.size(), 0);
  costs.fwd_s = msg[4];
  costs.bwd_s.assign(msg.begin() + 5, msg.end());
  switch (static_cast<int>(msg[0])) {
    case net_emulated:
      costs.network = *emulated;
      costs.algo = groups > 1 ? CollAlgo::algo_hierarchical : CollAlgo::algo_auto;
      costs.network_source =
          fmt::format("emulated: {} ({} all-reduce)", network_model_describe(*emulated), network_algo_name(costs.algo));
      break;
    case net_calibrated:
      costs.network = NetworkModel{network_link_from_allreduce_fit(msg[2], msg[3], n), std::nullopt, 1};
      costs.algo = CollAlgo::algo_ring;
      costs.network_source =
          fmt::format("native fabric: calibration {} all-reduce fit (alpha {:.3g} s, bus {:.3g} GB/s; ring)",
                      static_cast<int64_t>(msg[1]), msg[2], msg[3] / 1e9);
      break;
    case net_probe: network_probe(comm, workload.layers(), costs); break;
    default:
      costs.network_source = n <= 1 ? "one worker: no communication"
                                    : "free: sim backend without calibration or emulation (ideal network)";
      break;
  }
  return costs;
}

}  // namespace dsgd
