// The configuration of one run, and the single table of its fields that drives the
// command-line flags, the JSON/TOML config file keys and the stored JSON, so the three
// can never disagree. A key is the flag name without dashes ("weight-decay"); config
// files may also spell it with underscores ("weight_decay").
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

namespace dsgd {

struct RunConfig {
  std::string workload = "svm";
  std::string dataset = "fashion-mnist";
  std::string algo = "ssgd";
  int64_t period = 4;  // H: local steps between model averages (localsgd)
  int64_t batch = 64;  // per worker
  double lr = 0.0;     // 0: not given, the optimizer's default (optimizer_base_lr: sgd 0.05, adamw 0.001)
  double momentum = 0.0;
  double weight_decay = 1e-4;
  int64_t steps = 0;    // 0: derived from epochs
  double epochs = 0.0;  // 0: use steps; default 1 epoch when both are 0
  int64_t workers = 1;
  std::string backend = "mpi";
  uint64_t seed = 1;
  int64_t eval_every = 0;       // 0: about 10 evaluations per run
  int64_t eval_subset = 0;      // evaluate on a fixed, class-stratified subset of this many test rows (0: all)
  std::string target;           // "acc=0.80" or "loss=0.35"; empty: none
  bool stop_at_target = false;  // end the run at the first evaluation at or past --target
  double time_limit = 0;        // end the run at the first evaluation at or past this training time (s); 0: none
  std::string db = "./dsgd.db";
  std::string tag;
  int64_t warmup = 5;       // untimed steps at the start (clamped below the step count)
  int64_t threads = 1;      // BLAS threads per worker
  std::string hostfile;     // passed to mpiexec -f when launching
  std::string save_params;  // write the final averaged parameters (float32, raw) here
  bool timers = true;       // per-step instrumentation (off only to measure its cost)
  bool overlap = false;     // ssgd: per-layer non-blocking all-reduce launched during backward
  // Cluster settings (cluster/): stragglers, topology, emulated network.
  std::string straggler;  // "fixed:rank=1,delay=20ms;lognormal:sigma=0.3"; empty: none
  std::string topology = "complete";
  std::string bandwidth;        // emulated link bandwidth, e.g. "10Gbps"; empty: native fabric
  std::string latency;          // emulated link latency, e.g. "20us"
  std::string inter_bandwidth;  // between groups of hier:GxW
  std::string inter_latency;
  std::string link_efficiency = "auto";  // emulated goodput / nominal: auto (from mtu) or (0, 1]
  int64_t mtu = 1500;                    // MTU of the emulated links (bytes), for link_efficiency auto
  // Model shape (workloads/): which architecture of the workload, and the transformer's size.
  std::string model;      // resnet: resnet8|resnet20|resnet32|resnet56|resnet18; transformer: gpt; svm: ""
  int64_t layers = 4;     // transformer blocks
  int64_t d_model = 256;  // transformer width
  int64_t heads = 4;      // attention heads (must divide d_model)
  int64_t seq = 128;      // context length in tokens
  int64_t vocab = 256;    // token vocabulary (byte-level text: 256)
  bool augment = false;   // images: random crop (4-pixel padding) and horizontal flip
  // Optimizers, schedules and the SGD variants of algorithms/ (docs/algorithms.md).
  std::string optimizer = "auto";  // sgd | adamw | auto (adamw for diloco, sgd otherwise)
  bool nesterov = false;           // sgd: Nesterov momentum
  double beta1 = 0.9;              // adamw
  double beta2 = 0.999;
  double eps = 1e-8;
  std::string lr_schedule = "constant";  // constant | cosine | step
  int64_t lr_warmup = 0;                 // linear warm-up steps
  int64_t lr_step_every = 0;             // step schedule: decay every N steps
  double lr_step_gamma = 0.1;            // step schedule: factor
  std::string lr_scaling = "none";       // none | linear | sqrt (global batch / lr-base-batch)
  int64_t lr_base_batch = 256;
  int64_t post_local = 0;                    // localsgd: ssgd for the first K steps
  std::string period_schedule = "constant";  // localsgd: constant | qsr | adacomm (algorithms/period_schedule.hpp)
  double qsr_alpha = 0;   // localsgd --period-schedule qsr: α of H = max(H_base, ⌊(α/η)²⌋); 0: not set
  double outer_lr = 0.7;  // diloco outer Nesterov SGD
  double outer_momentum = 0.9;
  int64_t delay = 0;              // dasgd: steps between starting an average and applying it
  double pull_alpha = 0.5;        // overlap-local: pull x ← (1−α)x + αz
  double slow_momentum = 0.0;     // overlap-local: momentum of the anchor update
  double bucket_mb = 0.0;         // ssgd --overlap: bucket size in MB (0: one bucket per layer)
  double first_bucket_mb = 0.0;   // ssgd --overlap: the first bucket's size in MB (0: --bucket-mb)
  bool broadcast_buffers = true;  // ssgd of a cost file: DDP's broadcast of the buffers before each forward
  // Decentralised, sharded and compressed variants (algorithms/dpsgd.cpp, zero.cpp, compress/).
  int64_t dpsgd_delay = 0;   // dpsgd: 1 = exchange x_t while computing g(x_t) (Lian et al.'s form)
  std::string compress;      // gradient compressor: topk:RATIO | qsgd:bits=B | powersgd:rank=R; empty: none
  int64_t zero_bits = 32;    // zero: bits of the communicated weight differences and gradients (32 or 4)
  int64_t zero_group = 128;  // zero: quantisation group size (zero-bits 4)
  // Simulated cluster (--backend sim; docs/sim.md).
  bool timing_only = false;    // sim: advance the clocks only, no numerics
  double compute_scale = 1.0;  // sim: multiplies the compute profile (0.1 = a 10x faster device)
  int64_t profile_from = 0;    // sim: compute profile from this stored run (0: the host's calibration)
  bool schedule = false;       // dreamddp: print the layer→slot schedule at start
  bool native_floor = false;   // sim: communication lasts at least this host's calibrated native time
  std::string fabric;          // sim: the network as a fabric file measured it (tools/export_fabric.py)
  // sim: each (worker, step)'s compute drawn from the profile's measured distribution
  // ("profile", where the profile has one) or fixed at its mean ("off").
  std::string compute_jitter = "profile";

  // Parameter server (algorithms/ps.cpp).
  std::string ps_mode = "sync";       // sync | async | ssp
  int64_t ps_staleness = -1;          // ssp: staleness bound s in clocks (−1: not set)
  int64_t ps_shards = 0;              // K server shards (0: n colocated, 1 dedicated)
  std::string ps_placement = "auto";  // auto (dedicated on > 1 worker) | colocated | dedicated
  bool ps_one_step_delay = false;     // OD-SGD: the next gradient on parameters pulled before the push

  // palsgd, mtdao, osp (algorithms/palsgd.cpp, mtdao.cpp, osp.cpp) and dreamddp's filling.
  double pull_prob = 0.1;                // palsgd: probability of a pull towards the last global model per step
  int64_t period_m = 8;                  // mtdao: H_m, steps between averages of the first moments (0: never)
  int64_t period_v = 16;                 // mtdao: H_v, steps between averages of the second moment (0: never)
  std::string betas;                     // mtdao: decays of the momenta at several time scales; empty: one
  double osp_fraction = 0.25;            // osp: share of the gradient synchronised in stage 1
  std::string osp_select = "magnitude";  // osp: stage-1 selection rule: magnitude | static
  bool dreamddp_fill = true;             // dreamddp: fill idle link time with extra syncs
  bool gossip_overlap = true;            // oldsgd: overlap each gossip round with the next H local steps
  // Locally asynchronous and decoupled variants (algorithms/lasgd.cpp, hogwild.cpp, pdasgd.cpp).
  int64_t local_threads = 1;  // lasgd, hogwild: gradient threads per worker
  std::string across = "ps";  // hogwild: ps (async parameter server) | gossip (dpsgd)
  int64_t pd_staleness = 0;   // pdasgd: bound on a layer's weight staleness in steps

  // Not a field of the table: the keys the user typed for this run (command-line flags, a
  // suite entry), normalised ("weight-decay"). Validation refuses a knob of another algorithm
  // when it was given, even at its default value. Config files are not marked (a file
  // exported from a stored run lists every key), so there and in configs built in code a
  // knob of another algorithm is refused only when it differs from its default.
  std::vector<std::string> given_keys;
  bool given(const char* key) const;
};

// One entry of the field table.
struct RunConfigField {
  const char* key;   // "weight-decay"
  const char* help;  // one line for --help
  std::variant<std::string RunConfig::*, int64_t RunConfig::*, uint64_t RunConfig::*, double RunConfig::*,
               bool RunConfig::*>
      member;
};

const std::vector<RunConfigField>& run_config_fields();

// The accepted range of every numeric field of the table (docs/cli.md lists them), checked
// by run_config_validate for the command line and config files alike: lo..hi, each end
// closed unless marked open. NaN and infinities are outside every range.
struct RunConfigRange {
  const char* key;
  long double lo, hi;  // long double: exact for every int64/uint64 bound
  bool lo_open = false;
  bool hi_open = false;
};
const std::vector<RunConfigRange>& run_config_ranges();
const RunConfigRange* run_config_range(const std::string& key);
// The most training steps a run may take (--steps, or derived from --epochs).
constexpr int64_t kRunConfigMaxSteps = 1'000'000'000;
// The most workers a run may have (--workers): the timing-only simulator's limit.
constexpr int64_t kRunConfigMaxWorkers = 100'000;
// The most workers that compute (MPI ranks, calibrate's ranks, the simulator with numerics).
constexpr int64_t kRunConfigMaxComputingWorkers = 4096;
// Throws InputError "--KEY: must be in LO..HI (got V)" for the first numeric field outside
// its range (run_config_validate calls it last, after the more specific checks).
void run_config_check_ranges(const RunConfig& cfg);
// Bounds the nesting of a config file's text before it is parsed (a parser recursing once
// per dotted-key part or bracket would overflow the stack): at most kConfigMaxNesting
// bracket levels and dotted-key parts per line, and kConfigMaxBytes in all. Throws
// InputError naming `origin` and the line. TOML (toml = true) or JSON syntax for strings
// and comments.
constexpr size_t kConfigMaxNesting = 64;
constexpr size_t kConfigMaxBytes = size_t{1} << 20;
void run_config_check_nesting(const std::string& text, const std::string& origin, bool toml);

// Reads a JSON (.json) or TOML (.toml) file of keys from the table into cfg.
// Throws InputError naming the file and the key on an unknown key or a wrong type.
void run_config_load_file(RunConfig& cfg, const std::string& path);
// Same, from the text of such a file (toml: TOML syntax, else JSON); origin names it.
void run_config_load_text(RunConfig& cfg, const std::string& text, const std::string& origin, bool toml);
// Same, from an already-parsed JSON object (origin names the source in messages).
void run_config_apply_json(RunConfig& cfg, const nlohmann::json& obj, const std::string& origin);

nlohmann::json run_config_to_json(const RunConfig& cfg);

// Checks values that do not need files, the network or the SGD variants: positive counts,
// lr > 0, ..., then the ranges. Throws InputError naming the flag. The full
// check, with every variant's knobs, is config_validate (algorithms/config_check.hpp).
void run_config_validate(const RunConfig& cfg);
// The same without the range check (config_validate checks the ranges last).
void run_config_validate_generic(const RunConfig& cfg);

// Records that `key` was given explicitly (normalised: underscores become dashes).
void run_config_mark_given(RunConfig& cfg, const std::string& key);

// ps: whether the servers are dedicated ranks (--ps-placement dedicated, or auto on more
// than one worker) and the shard count K for n ranks (--ps-shards, else 1 dedicated / n
// colocated). One rule for the configuration check and algorithms/ps.cpp.
bool run_config_ps_dedicated(const RunConfig& cfg);
int64_t run_config_ps_shards(const RunConfig& cfg, int64_t n);

// Copies field `key` from src to dst.
void run_config_copy_field(RunConfig& dst, const RunConfig& src, const RunConfigField& field);

}  // namespace dsgd
