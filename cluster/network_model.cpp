// The α-β network model: unit parsing, collective cost by algorithm and the emulation
// hook. Formulas and limits are documented in network_model.hpp; each function below
// names the formula it computes.
#include "cluster/network_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <string_view>

#include "core/errors.hpp"
#include "core/text.hpp"

namespace dsgd {

namespace {

constexpr const char* kBandwidthHint =
    "give a number and a unit: bits per second as 10Gbps, 100Mbit/s, 1e9bps; bytes per second as 25GB/s, 500MB/s";
constexpr const char* kDurationHint = "give a number and a unit: ns, us, ms or s, e.g. 20us, 1ms, 0.5s";

// A number at the start of `text` (after spaces), and the unit after it (spaces trimmed).
// Throws InputError naming flag and text when there is no finite number.
struct NumberAndUnit {
  double value;
  std::string_view unit;
};

NumberAndUnit parse_number_and_unit(const std::string& text, const char* flag, const char* hint) {
  const std::string_view s = text_trim_view(text);
  if (s.empty()) DSGD_THROW(InputError, hint, "{} '{}': empty value", flag, text);
  double value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc()) {
    // from_chars reports out-of-range for 1e999 and rejects a leading '+' or a unit alone.
    if (ec == std::errc::result_out_of_range) DSGD_THROW(InputError, hint, "{} {}: number out of range", flag, text);
    DSGD_THROW(InputError, hint, "{} {}: not a number", flag, text);
  }
  if (!std::isfinite(value)) DSGD_THROW(InputError, hint, "{} {}: not a finite number", flag, text);
  return {value, text_trim_view(s.substr(static_cast<size_t>(end - s.data())))};
}

// ⌈log2 n⌉ for n >= 1 (0 for n = 1): the rounds of binomial trees, recursive doubling and
// dissemination.
double ceil_log2(int n) {
  return n <= 1 ? 0.0 : static_cast<double>(std::bit_width(static_cast<unsigned>(n - 1)));
}

// ---- flat algorithms on one link (formulas in the header) ------------------------------------

double allreduce_ring(const LinkModel& l, double S, int n) {
  return 2.0 * (n - 1) * (l.alpha_s + S / (n * l.bytes_per_s));
}
double allreduce_recursive_doubling(const LinkModel& l, double S, int n) {
  return ceil_log2(n) * (l.alpha_s + S / l.bytes_per_s);
}
double allreduce_tree(const LinkModel& l, double S, int n) {
  return 2.0 * ceil_log2(n) * (l.alpha_s + S / l.bytes_per_s);
}
double allreduce_rabenseifner(const LinkModel& l, double S, int n) {
  return 2.0 * ceil_log2(n) * l.alpha_s + 2.0 * (n - 1) / n * S / l.bytes_per_s;
}

// Reduce-scatter and all-gather have the same costs (one is the other reversed).
double scatter_gather_ring(const LinkModel& l, double S, int n) {
  return (n - 1) * (l.alpha_s + S / (n * l.bytes_per_s));
}
double scatter_gather_halving_doubling(const LinkModel& l, double S, int n) {
  return ceil_log2(n) * l.alpha_s + double(n - 1) / n * S / l.bytes_per_s;
}
double scatter_gather_tree(const LinkModel& l, double S, int n) {
  return ceil_log2(n) * (l.alpha_s + S / l.bytes_per_s) + scatter_gather_halving_doubling(l, S, n);
}

double broadcast_binomial(const LinkModel& l, double S, int n) {
  return ceil_log2(n) * (l.alpha_s + S / l.bytes_per_s);
}
// Binomial scatter (L·α + (n−1)/n·S/B) followed by an all-gather.
double broadcast_scatter_ring(const LinkModel& l, double S, int n) {
  return scatter_gather_halving_doubling(l, S, n) + scatter_gather_ring(l, S, n);
}
double broadcast_scatter_doubling(const LinkModel& l, double S, int n) {
  return 2.0 * scatter_gather_halving_doubling(l, S, n);
}

double barrier_dissemination(const LinkModel& l, int n) {
  return ceil_log2(n) * l.alpha_s;
}

double flat_time(const LinkModel& l, CollKind kind, CollAlgo algo, double S, int n) {
  switch (kind) {
    case CollKind::coll_allreduce:
      switch (algo) {
        case CollAlgo::algo_ring: return allreduce_ring(l, S, n);
        case CollAlgo::algo_tree: return allreduce_tree(l, S, n);
        case CollAlgo::algo_recursive_doubling: return allreduce_recursive_doubling(l, S, n);
        case CollAlgo::algo_rabenseifner: return allreduce_rabenseifner(l, S, n);
        case CollAlgo::algo_hierarchical:
        case CollAlgo::algo_auto:
          return std::min(
              {allreduce_ring(l, S, n), allreduce_recursive_doubling(l, S, n), allreduce_rabenseifner(l, S, n)});
      }
      break;
    case CollKind::coll_reduce_scatter:
    case CollKind::coll_allgather:
      switch (algo) {
        case CollAlgo::algo_ring: return scatter_gather_ring(l, S, n);
        case CollAlgo::algo_tree: return scatter_gather_tree(l, S, n);
        case CollAlgo::algo_recursive_doubling:
        case CollAlgo::algo_rabenseifner: return scatter_gather_halving_doubling(l, S, n);
        case CollAlgo::algo_hierarchical:
        case CollAlgo::algo_auto:
          return std::min(scatter_gather_ring(l, S, n), scatter_gather_halving_doubling(l, S, n));
      }
      break;
    case CollKind::coll_broadcast:
      switch (algo) {
        case CollAlgo::algo_tree: return broadcast_binomial(l, S, n);
        case CollAlgo::algo_ring: return broadcast_scatter_ring(l, S, n);
        case CollAlgo::algo_recursive_doubling:
        case CollAlgo::algo_rabenseifner: return broadcast_scatter_doubling(l, S, n);
        case CollAlgo::algo_hierarchical:
        case CollAlgo::algo_auto:
          return std::min(
              {broadcast_binomial(l, S, n), broadcast_scatter_ring(l, S, n), broadcast_scatter_doubling(l, S, n)});
      }
      break;
    case CollKind::coll_barrier: return barrier_dissemination(l, n);
    case CollKind::coll_sendrecv:
    case CollKind::coll_onesided: return network_p2p_time(l, S);
  }
  return 0.0;
}

// Hierarchical: G = min(groups, n) groups of W = ⌈n/G⌉ ranks (formulas in the header).
double hierarchical_time(const NetworkModel& m, CollKind kind, double S, int n) {
  const int G = std::clamp(m.groups, 1, n);
  const int W = (n + G - 1) / G;
  const LinkModel& in = m.intra;
  const LinkModel out = network_inter_link(m);
  switch (kind) {
    case CollKind::coll_allreduce:
      // intra reduce-scatter + inter all-reduce of S/W among G + intra all-gather
      return 2.0 * scatter_gather_ring(in, S, W) + (G > 1 ? allreduce_ring(out, S / W, G) : 0.0);
    case CollKind::coll_reduce_scatter:
    case CollKind::coll_allgather:
      // intra reduce-scatter of S + inter reduce-scatter of S/W among G (all-gather reversed)
      return scatter_gather_ring(in, S, W) + (G > 1 ? scatter_gather_ring(out, S / W, G) : 0.0);
    case CollKind::coll_broadcast: return (G > 1 ? broadcast_binomial(out, S, G) : 0.0) + broadcast_binomial(in, S, W);
    case CollKind::coll_barrier:
      return 2.0 * barrier_dissemination(in, W) + (G > 1 ? barrier_dissemination(out, G) : 0.0);
    case CollKind::coll_sendrecv:
    case CollKind::coll_onesided:
      // The peer may sit in another group: the slower link (conservative).
      return network_p2p_time(network_bottleneck_link(m), S);
  }
  return 0.0;
}

// allow_infinite_bandwidth: a calibrated native link may have no bandwidth term (beta = 0).
void check_link(const LinkModel& l, const char* what, bool allow_infinite_bandwidth) {
  const bool bandwidth_ok = l.bytes_per_s > 0 && (allow_infinite_bandwidth || std::isfinite(l.bytes_per_s));
  if (!bandwidth_ok || !(l.alpha_s >= 0) || !std::isfinite(l.alpha_s))
    DSGD_THROW(Error, "", "network model: {} link has bandwidth {} B/s and latency {} s (need B > 0, α >= 0)", what,
               l.bytes_per_s, l.alpha_s);
}

void check_model(const NetworkModel& m, const char* what, bool allow_infinite_bandwidth) {
  check_link(m.intra, what, allow_infinite_bandwidth);
  if (m.inter) check_link(*m.inter, what, allow_infinite_bandwidth);
  if (m.groups < 1) DSGD_THROW(Error, "", "network model: {} model has {} groups (need >= 1)", what, m.groups);
}

// Trampoline of EmulationHook: ctx is the NetworkEmulation.
double network_emulation_extra(const void* ctx, CollKind kind, double bytes, int ranks) {
  return static_cast<const NetworkEmulation*>(ctx)->extra_s(kind, bytes, ranks);
}

std::string describe_bandwidth(double bytes_per_s) {
  const double bits = bytes_per_s * 8.0;
  if (bits >= 1e12) return fmt::format("{:.4g} Tbit/s", bits / 1e12);
  if (bits >= 1e9) return fmt::format("{:.4g} Gbit/s", bits / 1e9);
  if (bits >= 1e6) return fmt::format("{:.4g} Mbit/s", bits / 1e6);
  if (bits >= 1e3) return fmt::format("{:.4g} kbit/s", bits / 1e3);
  return fmt::format("{:.4g} bit/s", bits);
}

std::string describe_duration(double s) {
  if (s == 0) return "0 s";
  if (s >= 1) return fmt::format("{:.4g} s", s);
  if (s >= 1e-3) return fmt::format("{:.4g} ms", s * 1e3);
  if (s >= 1e-6) return fmt::format("{:.4g} us", s * 1e6);
  return fmt::format("{:.4g} ns", s * 1e9);
}

}  // namespace

// ---- units -----------------------------------------------------------------------------------

double network_parse_bandwidth(const std::string& text, const char* flag) {
  const auto [value, unit_all] = parse_number_and_unit(text, flag, kBandwidthHint);
  if (!(value > 0)) DSGD_THROW(InputError, kBandwidthHint, "{} {}: must be positive", flag, text);
  if (unit_all.empty())
    DSGD_THROW(InputError, kBandwidthHint, "{} {}: missing unit (bits or bytes per second?)", flag, text);

  std::string_view unit = unit_all;
  double scale = 1.0;
  // Prefix: k/K, M, G, T decimal (case-insensitive letter), followed by 'i' for binary.
  // The units themselves start with b or B, so a prefix letter cannot be confused with one.
  static constexpr struct {
    char lower;
    double decimal;
    double binary;
  } kPrefixes[] = {{'k', 1e3, 1024.0}, {'m', 1e6, 1048576.0}, {'g', 1e9, 1073741824.0}, {'t', 1e12, 1099511627776.0}};
  for (const auto& p : kPrefixes) {
    if (unit.front() == p.lower || unit.front() == p.lower - 'a' + 'A') {
      unit.remove_prefix(1);
      if (!unit.empty() && unit.front() == 'i') {
        unit.remove_prefix(1);
        scale = p.binary;
      } else {
        scale = p.decimal;
      }
      break;
    }
  }
  if (unit == "bps" || unit == "b/s" || unit == "bit/s" || unit == "bits/s") {
    scale /= 8.0;
  } else if (unit == "B/s" || unit == "Byte/s" || unit == "Bytes/s") {
    // bytes: scale as is
  } else if (unit == "Bps") {
    DSGD_THROW(InputError, kBandwidthHint, "{} {}: ambiguous unit '{}': write B/s for bytes or bps for bits", flag,
               text, unit_all);
  } else {
    DSGD_THROW(InputError, kBandwidthHint, "{} {}: unknown unit '{}'", flag, text, unit_all);
  }
  const double bytes_per_s = value * scale;
  if (!std::isfinite(bytes_per_s)) DSGD_THROW(InputError, kBandwidthHint, "{} {}: number out of range", flag, text);
  // A sane link: slower than 1 kbit/s every collective takes minutes or hours (a run that
  // looks hung), faster than 10 Tbit/s is no fabric that exists.
  if (bytes_per_s < kNetworkMinBytesPerS || bytes_per_s > kNetworkMaxBytesPerS)
    DSGD_THROW(InputError, "give a bandwidth from 1kbps to 10Tbps (125 B/s to 1.25 TB/s)",
               "{} {}: {:.3g} bytes/s is outside the range of an emulated link, 1 kbit/s to 10 Tbit/s", flag, text,
               bytes_per_s);
  return bytes_per_s;
}

double network_parse_duration(const std::string& text, const char* flag, double max_s) {
  const auto [value, unit] = parse_number_and_unit(text, flag, kDurationHint);
  if (value < 0 || std::signbit(value))
    DSGD_THROW(InputError, kDurationHint, "{} {}: must not be negative", flag, text);
  if (unit.empty()) {
    if (value == 0) return 0.0;
    DSGD_THROW(InputError, kDurationHint, "{} {}: missing unit", flag, text);
  }
  double scale = 0;
  if (unit == "ns") {
    scale = 1e-9;
  } else if (unit == "us" || unit == "\u00b5s" || unit == "\u03bcs") {
    scale = 1e-6;
  } else if (unit == "ms") {
    scale = 1e-3;
  } else if (unit == "s") {
    scale = 1.0;
  } else {
    DSGD_THROW(InputError, kDurationHint, "{} {}: unknown unit '{}'", flag, text, unit);
  }
  const double seconds = value * scale;
  if (seconds > max_s)
    DSGD_THROW(InputError,
               fmt::format("give at most {} (a longer one makes the run look hung)", describe_duration(max_s)),
               "{} {}: must be at most {}", flag, text, describe_duration(max_s));
  return seconds;
}

// ---- the model ---------------------------------------------------------------------------------

double network_tcp_goodput_fraction(int64_t mtu) {
  if (mtu < 68 || mtu > 65536)
    DSGD_THROW(InputError, "pass the link's MTU in bytes, e.g. --mtu 1500 (Ethernet) or 9000 (jumbo frames)",
               "--mtu {}: must be in 68..65536", mtu);
  constexpr double kIpTcpHeaders = 20 + 20 + 12;        // IPv4, TCP, TCP timestamps option
  constexpr double kEthernetFraming = 14 + 4 + 8 + 12;  // header, FCS, preamble + SFD, inter-frame gap
  const double m = static_cast<double>(mtu);
  return (m - kIpTcpHeaders) / (m + kEthernetFraming);
}

double network_link_efficiency(const std::string& link_efficiency, int64_t mtu, int* mtu_used) {
  constexpr const char* kHint =
      "pass --link-efficiency auto (TCP/IPv4 over Ethernet at --mtu), 1 (the nominal rate) or a measured "
      "fraction such as 0.9";
  const double from_mtu = network_tcp_goodput_fraction(mtu);  // checks --mtu in every case
  const std::string_view text = text_trim_view(link_efficiency);
  if (text == "auto") {
    if (mtu_used) *mtu_used = static_cast<int>(mtu);
    return from_mtu;
  }
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    DSGD_THROW(InputError, kHint, "--link-efficiency '{}': not 'auto' or a number", link_efficiency);
  if (!(value > 0 && value <= 1))
    DSGD_THROW(InputError, kHint, "--link-efficiency {}: must be in (0, 1]", link_efficiency);
  if (mtu_used) *mtu_used = 0;
  return value;
}

LinkModel network_inter_link(const NetworkModel& model) {
  return model.inter ? *model.inter : model.intra;
}

LinkModel network_bottleneck_link(const NetworkModel& model) {
  if (model.groups <= 1 || !model.inter) return model.intra;
  return {std::max(model.intra.alpha_s, model.inter->alpha_s),
          std::min(model.intra.bytes_per_s, model.inter->bytes_per_s)};
}

std::optional<NetworkModel> network_model_from_flags(const std::string& bandwidth, const std::string& latency,
                                                     const std::string& inter_bandwidth,
                                                     const std::string& inter_latency, int groups,
                                                     const std::string& link_efficiency, int64_t mtu) {
  if (groups < 1) DSGD_THROW(Error, "", "network model: {} groups (need >= 1)", groups);
  int mtu_used = 0;
  const double efficiency = network_link_efficiency(link_efficiency, mtu, &mtu_used);
  if (bandwidth.empty()) {
    const struct {
      const char* flag;
      const std::string& value;
    } dependents[] = {
        {"--latency", latency}, {"--inter-bandwidth", inter_bandwidth}, {"--inter-latency", inter_latency}};
    for (const auto& d : dependents)
      if (!d.value.empty())
        DSGD_THROW(InputError, "add --bandwidth, e.g. --bandwidth 10Gbps --latency 20us",
                   "{} {}: needs --bandwidth (without it the real network is used as it is)", d.flag, d.value);
    return std::nullopt;
  }
  NetworkModel m;
  m.groups = groups;
  m.intra.bytes_per_s = network_parse_bandwidth(bandwidth, "--bandwidth");
  m.intra.alpha_s = latency.empty() ? 0.0 : network_parse_duration(latency, "--latency");
  if (!inter_bandwidth.empty() || !inter_latency.empty()) {
    if (groups <= 1) {
      const bool bw = !inter_bandwidth.empty();
      DSGD_THROW(InputError, "use a topology with groups, e.g. --topology hier:2x4, or drop the inter-group flags",
                 "{} {}: applies only between the groups of a hier:GxW topology, and this topology has 1 group",
                 bw ? "--inter-bandwidth" : "--inter-latency", bw ? inter_bandwidth : inter_latency);
    }
    LinkModel inter = m.intra;
    if (!inter_bandwidth.empty()) inter.bytes_per_s = network_parse_bandwidth(inter_bandwidth, "--inter-bandwidth");
    if (!inter_latency.empty()) inter.alpha_s = network_parse_duration(inter_latency, "--inter-latency");
    m.inter = inter;
  }
  m.efficiency = efficiency;
  m.mtu = efficiency < 1.0 ? mtu_used : 0;
  m.intra.bytes_per_s *= efficiency;
  if (m.inter) m.inter->bytes_per_s *= efficiency;
  return m;
}

std::string network_model_describe(const NetworkModel& model) {
  // Nominal rates: the links hold goodput (bytes_per_s × efficiency).
  const double nominal = model.efficiency > 0 ? 1.0 / model.efficiency : 1.0;
  std::string s = fmt::format("intra {}, {}", describe_bandwidth(model.intra.bytes_per_s * nominal),
                              describe_duration(model.intra.alpha_s));
  if (model.groups > 1) {
    const LinkModel inter = network_inter_link(model);
    s += fmt::format("; inter {}, {} ({} groups)", describe_bandwidth(inter.bytes_per_s * nominal),
                     describe_duration(inter.alpha_s), model.groups);
  }
  if (model.efficiency < 1.0) {
    s += fmt::format(
        "; goodput {:.4f} of nominal ({})", model.efficiency,
        model.mtu > 0 ? fmt::format("TCP/IPv4 over Ethernet, MTU {}", model.mtu) : std::string("--link-efficiency"));
  }
  return s;
}

// ---- collective cost -----------------------------------------------------------------------------

const char* network_algo_name(CollAlgo algo) {
  switch (algo) {
    case CollAlgo::algo_ring: return "ring";
    case CollAlgo::algo_tree: return "tree";
    case CollAlgo::algo_recursive_doubling: return "recursive-doubling";
    case CollAlgo::algo_rabenseifner: return "rabenseifner";
    case CollAlgo::algo_hierarchical: return "hierarchical";
    case CollAlgo::algo_auto: return "auto";
  }
  return "unknown";
}

double network_p2p_time(const LinkModel& link, double bytes) {
  return link.alpha_s + bytes / link.bytes_per_s;
}

double network_message_time(const NetworkModel& model, CollKind kind, bool between_groups, double bytes) {
  if (model.measured && model.groups <= 1)
    if (const std::optional<double> t = measured_fabric_time(*model.measured, kind, bytes)) return *t;
  return network_p2p_time(between_groups ? network_inter_link(model) : model.intra, bytes);
}

double network_collective_time(const NetworkModel& model, CollKind kind, CollAlgo algo, double bytes, int n) {
  if (n <= 1) return 0.0;
  const bool grouped = std::min(model.groups, n) > 1;
  if (model.measured && !grouped) {
    if (const std::optional<double> t = measured_fabric_time(*model.measured, kind, bytes)) {
      const int ranks = model.measured->ranks;
      if (n == ranks) return *t;
      const double at_ranks = flat_time(model.intra, kind, CollAlgo::algo_ring, bytes, ranks);
      return at_ranks > 0 ? *t * flat_time(model.intra, kind, CollAlgo::algo_ring, bytes, n) / at_ranks : *t;
    }
  }
  if (algo == CollAlgo::algo_hierarchical || (algo == CollAlgo::algo_auto && grouped))
    return hierarchical_time(model, kind, bytes, n);
  // algo_auto without groups: flat_time takes the minimum over the flat algorithms.
  return flat_time(network_bottleneck_link(model), kind, algo, bytes, n);
}

LinkModel network_link_from_allreduce_fit(double alpha_s, double bus_bytes_per_s, int n) {
  return {n <= 1 ? alpha_s : alpha_s / (2.0 * (n - 1)), bus_bytes_per_s};
}

// ---- emulation --------------------------------------------------------------------------------------

NetworkEmulation::NetworkEmulation(NetworkModel emulated, std::optional<NetworkModel> native, int n, CollAlgo algo)
    : emulated_(emulated), native_(native), n_(n), algo_(algo) {
  check_model(emulated_, "emulated", false);
  if (native_) check_model(*native_, "native", true);
  if (n_ < 1) DSGD_THROW(Error, "", "network emulation: {} ranks (need >= 1)", n_);
}

EmulationHook NetworkEmulation::hook() const {
  return EmulationHook{&network_emulation_extra, this};
}

double NetworkEmulation::extra_s(CollKind kind, double bytes, int ranks) const {
  const double emulated = network_collective_time(emulated_, kind, algo_, bytes, ranks);
  const double native = native_ ? network_collective_time(*native_, kind, CollAlgo::algo_ring, bytes, ranks) : 0.0;
  return std::max(0.0, emulated - native);
}

double NetworkEmulation::predicted_s(CollKind kind, double bytes) const {
  return network_collective_time(emulated_, kind, algo_, bytes, n_);
}

}  // namespace dsgd
