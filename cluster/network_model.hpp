// The α-β network model (docs/cluster.md): parsing of the --bandwidth/--latency flags, the
// modelled time of each collective by algorithm, and the emulation hook that makes a
// real collective last as long as it would on the emulated link.
//
// Model. Sending one message of m bytes over a link costs  t = α + m/B  (α: latency in
// seconds, B: bandwidth in bytes/s). Collective costs for n ranks and a buffer of S bytes
// follow Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication
// Operations in MPICH", IJHPCA 19(1), 2005 (γ, the reduction's compute term, is left out:
// the real reduction runs for real). With L = ⌈log2 n⌉:
//
//   all-reduce    ring                 2(n−1)·(α + S/(nB))
//                 recursive doubling   L·(α + S/B)
//                 tree                 2L·(α + S/B)            binomial reduce + broadcast
//                 Rabenseifner         2L·α + 2(n−1)/n·S/B     recursive halving RS + doubling AG
//   reduce-scatter / all-gather
//                 ring                 (n−1)·(α + S/(nB))
//                 recursive halving/doubling (algo_recursive_doubling, algo_rabenseifner)
//                                      L·α + (n−1)/n·S/B
//                 tree                 L·(α + S/B) + L·α + (n−1)/n·S/B
//                                      (binomial reduce + scatter; gather + broadcast)
//   broadcast     tree (binomial)      L·(α + S/B)
//                 ring                 L·α + (n−1)/n·S/B + (n−1)·(α + S/(nB))
//                                      (binomial scatter + ring all-gather, van de Geijn)
//                 recursive doubling / Rabenseifner
//                                      2L·α + 2(n−1)/n·S/B    (scatter + recursive doubling AG)
//   barrier       dissemination        L·α  (every algorithm; S is ignored)
//   point-to-point                     α + S/B    (CollKind::coll_sendrecv; S: all bytes the rank
//                                      sends in the exchange; hierarchical: the bottleneck link)
//
// Hierarchical (G groups of W = ⌈n/G⌉ ranks; intra link i inside a group, inter link e
// between groups):
//   all-reduce     (W−1)(α_i + S/(W·B_i))            intra reduce-scatter (ring)
//                + 2(G−1)(α_e + (S/W)/(G·B_e))       inter all-reduce of each S/W shard among
//                                                    the G ranks holding it (ring)
//                + (W−1)(α_i + S/(W·B_i))            intra all-gather (ring)
//   reduce-scatter (W−1)(α_i + S/(W·B_i)) + (G−1)(α_e + S/(W·G·B_e));  all-gather: the same
//   broadcast      L_G·(α_e + S/B_e) + L_W·(α_i + S/B_i)   (binomial among group leaders, then inside)
//   barrier        2·L_W·α_i + L_G·α_e               (inside, between leaders, release inside)
// With G = 1 every hierarchical formula equals the flat ring (or binomial/dissemination) one.
//
// Limits.
// - Flat algorithms on a model with groups > 1 run every step at the bottleneck link
//   (max α, min B): a ring crosses group boundaries in every step, and a step of a
//   synchronous algorithm lasts as long as its slowest message. Conservative for
//   recursive doubling and trees, whose first rounds may stay inside a group.
// - ⌈log2 n⌉ rounds are used for non-powers of two as well (MPICH adds up to two steps there).
// - Links are full duplex and contention-free; no congestion, no incast, no pipelining
//   of large messages into segments.
// - Framing (network_tcp_goodput_fraction): by default (--link-efficiency auto) the link's B
//   is its nominal rate times the goodput fraction of TCP/IPv4 over Ethernet at --mtu
//   (0.9415 at 1500), so `--bandwidth 100Mbps` means a 100 Mbit/s Ethernet link as TCP
//   sees it. TCP dynamics (slow start, congestion-window halving on a shaper's drops, ACKs
//   sharing the reverse direction) are not modelled: on a tbf-shaped veth pair (4 MB
//   all-reduce, 2 ranks, 100 Mbit/s and 1 Gbit/s) the medians were within 2 % of this model
//   (docs/cluster.md, "Two hosts on one machine").
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "cluster/communicator.hpp"
#include "cluster/measured_fabric.hpp"

namespace dsgd {

// ---- units -------------------------------------------------------------------------------
// Bandwidth text → bytes per second. A number, optional spaces, and a unit:
//   bits per second:  bps, b/s, bit/s, bits/s           (10Gbps, 100Mbit/s, 1e9bps, 10 Gb/s)
//   bytes per second: B/s, Byte/s, Bytes/s              (25GB/s, 500MB/s, 1.25 GB/s)
// with an optional decimal prefix k/K (1e3), M (1e6), G (1e9), T (1e12) — the prefix letter
// may be lower case (10gbps = 10Gbps) — or a binary one Ki/Mi/Gi/Ti (2^10...), usual for bytes
// (1GiB/s). The b/B of the unit is case-sensitive: 8Gbps == 1GB/s. A plain number has no
// unit and is rejected (bits or bytes?), and so is "Bps" (GBps is bytes to some, a typo
// of Gbps to others): write GB/s or Gbps. Throws InputError naming `flag` and the text
// unless the value is a finite number in 1 kbit/s..10 Tbit/s (125 B/s..1.25e12 B/s).
constexpr double kNetworkMinBytesPerS = 1e3 / 8;
constexpr double kNetworkMaxBytesPerS = 10e12 / 8;
double network_parse_bandwidth(const std::string& text, const char* flag = "--bandwidth");

// Duration text → seconds: a number, optional spaces, and ns, us (µs), ms or s
// (20us, 1ms, 0.5s, 100ns, "2 ms"). Zero is allowed (a link without latency) and may be
// written without a unit ("0"); anything else needs a unit. Throws InputError naming
// `flag` and the text on negative, non-finite, unit-less or unparsable values, and on
// values above max_s (a link latency: 60 s; a straggler delay passes kStragglerMaxDelayS).
constexpr double kNetworkMaxLatencyS = 60.0;
double network_parse_duration(const std::string& text, const char* flag = "--latency",
                              double max_s = kNetworkMaxLatencyS);

// ---- the model ---------------------------------------------------------------------------
// One link class: one message of m bytes takes alpha_s + m / bytes_per_s seconds.
struct LinkModel {
  double alpha_s = 0;
  double bytes_per_s = 0;
};

// The links of a cluster: `intra` inside a group (every link when groups == 1), `inter`
// between groups (empty: same as intra). groups is G of a hier:GxW topology, 1 otherwise.
// efficiency: the goodput fraction already applied to every link's bytes_per_s (1: the
// nominal rate as typed); mtu: the MTU it was derived from (0: given as a number). Both
// only describe the model (network_model_describe). measured: a calibration's collective
// curves (cluster/measured_fabric.hpp), read instead of intra's α-β line for the kinds they
// cover when groups == 1; intra is then that calibration's all-reduce fit, which scales a
// curve to other rank counts.
struct NetworkModel {
  LinkModel intra;
  std::optional<LinkModel> inter;
  int groups = 1;
  double efficiency = 1.0;
  int mtu = 0;
  std::shared_ptr<const MeasuredFabric> measured = nullptr;
};

// ---- protocol overhead -----------------------------------------------------------------------
// Fraction of a link's nominal bit rate that a bulk TCP/IPv4 transfer over Ethernet carries
// as payload, for a given MTU (bytes of IP packet):
//     payload = MTU − 20 (IPv4) − 20 (TCP) − 12 (TCP timestamps option)
//     wire    = MTU + 14 (Ethernet header) + 4 (FCS) + 8 (preamble + SFD) + 12 (inter-frame gap)
//     goodput fraction = payload / wire           (MTU 1500: 1448 / 1538 = 0.94148)
// ACKs on the reverse direction and TCP's congestion control are left out (see Limits).
// Throws InputError naming --mtu unless 68 <= mtu <= 65536 (the IPv4 minimum .. loopback).
double network_tcp_goodput_fraction(int64_t mtu);

// The goodput fraction the emulated link uses, from the --link-efficiency and --mtu flags:
// "auto" → network_tcp_goodput_fraction(mtu); a number in (0, 1] → that number (1: the nominal
// rate, no framing; a value measured on a real link, e.g. 0.88, calibrates it). `mtu_used` is
// set to the MTU for "auto", 0 for a number. Throws InputError naming the flag otherwise.
double network_link_efficiency(const std::string& link_efficiency, int64_t mtu, int* mtu_used = nullptr);

// The link between groups: inter when set, else intra.
LinkModel network_inter_link(const NetworkModel& model);
// The slowest link of the model (max α, min B), on which flat algorithms run.
LinkModel network_bottleneck_link(const NetworkModel& model);

// The emulated network from the run's flags (RunConfig bandwidth, latency, inter_bandwidth,
// inter_latency) and the topology's number of groups. Empty when bandwidth is empty (no
// emulation). Every link's bandwidth is multiplied by network_link_efficiency(link_efficiency,
// mtu) (the defaults here, "1", keep the nominal rate; RunConfig's default is "auto"); the two
// are checked even without --bandwidth. latency defaults to 0. inter-bandwidth / inter-latency default to the intra
// values and are only allowed when groups > 1. Throws InputError naming the flag: latency
// or inter-* without --bandwidth, inter-* with one group, bad values (see the parsers).
std::optional<NetworkModel> network_model_from_flags(const std::string& bandwidth, const std::string& latency,
                                                     const std::string& inter_bandwidth,
                                                     const std::string& inter_latency, int groups,
                                                     const std::string& link_efficiency = "1", int64_t mtu = 1500);

// "intra 100 Mbit/s, 1 ms; inter 1 Gbit/s, 2 ms (2 groups)" (inter only when groups > 1),
// nominal rates; with an efficiency below 1 followed by
// "; goodput 0.9415 of nominal (TCP/IPv4 over Ethernet, MTU 1500)" (or "(--link-efficiency)").
std::string network_model_describe(const NetworkModel& model);

// ---- collective cost ---------------------------------------------------------------------
enum class CollAlgo : int32_t {
  algo_ring = 0,
  algo_tree = 1,
  algo_recursive_doubling = 2,
  algo_rabenseifner = 3,
  algo_hierarchical = 4,
  // groups > 1: hierarchical. Otherwise the fastest of ring, recursive doubling and
  // Rabenseifner under the model (tree too for broadcast), i.e. what a library tuned
  // for this network would pick (MPICH: recursive doubling for short messages,
  // Rabenseifner / ring for long ones).
  algo_auto = 5,
};
const char* network_algo_name(CollAlgo algo);

// Seconds one message of `bytes` takes on `link`: α + bytes/B.
double network_p2p_time(const LinkModel& link, double bytes);

// Seconds one point-to-point message (kind coll_sendrecv) or one remote access of a one-sided
// window (coll_onesided) of `bytes` takes on the model: the measured curve of that kind when
// the model has one (and one group), else network_p2p_time on the intra link, or on the inter
// link when `between_groups`.
double network_message_time(const NetworkModel& model, CollKind kind, bool between_groups, double bytes);

// Modelled seconds of one collective of `bytes` (the buffer size S: the whole vector for
// all-reduce, reduce-scatter's input, all-gather's output) over n ranks (formulas at the
// top of this file). 0 when n <= 1. With measured curves (and one group) the kind's curve
// at S, times ring(n) / ring(ranks of the curve) on the intra link; `algo` is then the
// measured library's own choice and is not applied. O(log sizes), never allocates, never throws.
double network_collective_time(const NetworkModel& model, CollKind kind, CollAlgo algo, double bytes, int n);

// A link whose ring all-reduce model reproduces a calibrated all-reduce line
//     t(S) = alpha_s + 2(n−1)/n · S / bus_bytes_per_s      (results/alpha_beta_fit.hpp,
// alpha the whole collective's fixed cost, bus_bytes_per_s = 1/beta, +inf when beta = 0):
// the ring's 2(n−1) messages share alpha, so the link is {alpha_s / (2(n−1)), bus_bytes_per_s}.
// n = 1: {alpha_s, bus_bytes_per_s}. The native model of NetworkEmulation, which is
// evaluated with the ring formulas.
LinkModel network_link_from_allreduce_fit(double alpha_s, double bus_bytes_per_s, int n);

// ---- emulation -----------------------------------------------------------------------------
// Makes every recorded collective of a Communicator last as long as on the emulated
// network: after the real collective, each rank holds for
//     extra = max(0, model(emulated, S) − model(native, S))
// seconds, the same on every rank (it depends only on kind, S and n). The emulated model
// uses `algo` (algo_auto by default: what a library tuned for that network would pick).
// `native` is the real fabric as `dsgd-bench calibrate` measured it, evaluated with the
// ring formulas (algo_ring) so that a link from network_link_from_allreduce_fit gives back
// the calibrated all-reduce line exactly; native bandwidth may be +inf (latency only).
// When native is unknown nothing is subtracted, so the measured time is model + real:
// with MPICH's shared memory on one host the real part is microseconds for small messages
// and 10-20 ms for a 4 MB all-reduce on a busy 2-core machine (a few % of a 100 Mbit/s model).
//
// The hook points at this object: keep it alive, at the same address, while a
// Communicator uses the hook (it is neither copyable nor movable for that reason).
class NetworkEmulation {
 public:
  NetworkEmulation(NetworkModel emulated, std::optional<NetworkModel> native, int n,
                   CollAlgo algo = CollAlgo::algo_auto);
  NetworkEmulation(const NetworkEmulation&) = delete;
  NetworkEmulation& operator=(const NetworkEmulation&) = delete;

  // For Communicator::set_emulation. Calls extra_s with the communicator's size.
  EmulationHook hook() const;
  // Extra seconds to hold a collective of `bytes` over the n ranks of the constructor.
  double extra_s(CollKind kind, double bytes) const { return extra_s(kind, bytes, n_); }
  double extra_s(CollKind kind, double bytes, int ranks) const;
  // Modelled time on the emulated network (what the measured time should approach).
  double predicted_s(CollKind kind, double bytes) const;

  const NetworkModel& emulated() const { return emulated_; }
  const std::optional<NetworkModel>& native() const { return native_; }
  int ranks() const { return n_; }
  CollAlgo algo() const { return algo_; }

 private:
  NetworkModel emulated_;
  std::optional<NetworkModel> native_;
  int n_;
  CollAlgo algo_;
};

}  // namespace dsgd
