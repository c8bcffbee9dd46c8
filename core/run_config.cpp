// Field table of RunConfig, JSON/TOML config-file loading with strict key and type
// checks, and value validation. See run_config.hpp.
#include "core/run_config.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "core/errors.hpp"

namespace dsgd {

const std::vector<RunConfigField>& run_config_fields() {
  using C = RunConfig;
  static const std::vector<RunConfigField> fields = {
      {"workload",
       "workload to train (dsgd-bench list workloads), or profile:FILE, a model cost file to time, or chakra:FILE, a "
       "Chakra execution trace to time",
       &C::workload},
      {"dataset", "dataset spec: fashion-mnist | synthetic:n=..,d=.. | libsvm:PATH (dsgd-bench list datasets)",
       &C::dataset},
      {"algo", "SGD variant (dsgd-bench list algorithms)", &C::algo},
      {"period", "H: local steps between model averages (cocod: its k; oldsgd: steps between gossip rounds)",
       &C::period},
      {"batch", "batch size per worker", &C::batch},
      {"lr", "learning rate (default: the optimizer's, sgd 0.05, adamw 0.001)", &C::lr},
      {"momentum", "SGD momentum (0 = plain SGD)", &C::momentum},
      {"weight-decay", "L2 weight decay (the SVM's regulariser)", &C::weight_decay},
      {"steps", "training steps per worker (overrides --epochs)", &C::steps},
      {"epochs", "epochs over each worker's shard (used when --steps is 0; default 1)", &C::epochs},
      {"workers", "number of workers (MPI ranks); outside mpiexec, N>1 re-launches through mpiexec -n N", &C::workers},
      {"backend",
       "execution backend: mpi (real ranks) | sim (virtual clock, real numerics) | nccl (GPUs; dsgd-bench list "
       "backends)",
       &C::backend},
      {"seed", "random seed (data order, initialisation, synthetic data)", &C::seed},
      {"eval-every", "evaluate every K steps (0 = about 10 evaluations)", &C::eval_every},
      {"eval-subset",
       "evaluate on a fixed, class-stratified subset of N test rows, the same for every run (0, or N at least "
       "the test set's rows: the whole test set); cheaper evaluations for deep workloads, at a wider confidence "
       "interval",
       &C::eval_subset},
      {"target", "target for time-to-target: acc=0.80 or loss=0.35", &C::target},
      {"stop-at-target", "end the run at the first evaluation that reaches --target (all ranks together)",
       &C::stop_at_target},
      {"time-limit",
       "end the run at the first evaluation at or past this many seconds of training time (0: none; the clock of "
       "time-to-target: wall on mpi, virtual on sim)",
       &C::time_limit},
      {"db", "SQLite results database", &C::db},
      {"tag", "free-text tag stored with the run", &C::tag},
      {"warmup", "untimed warm-up steps at the start", &C::warmup},
      {"threads", "compute threads per worker (BLAS, oneDNN and the layer loops)", &C::threads},
      {"hostfile", "MPI hostfile for multi-machine runs (passed to mpiexec -f)", &C::hostfile},
      {"save-params", "write the final averaged parameters (raw float32) to this file", &C::save_params},
      {"timers", "per-step instrumentation (disable only to measure its overhead)", &C::timers},
      {"overlap", "ssgd: launch each layer's gradient all-reduce (non-blocking) from backward, wait before the update",
       &C::overlap},
      {"straggler",
       "injected compute slowdowns, ';'-separated: fixed:rank=R,delay=20ms | fixed:rank=R,factor=2 | "
       "random:p=0.05,delay=30ms | lognormal:sigma=0.3 | pareto:alpha=2,scale=5ms | "
       "periodic:rank=R,every=50,delay=200ms",
       &C::straggler},
      {"topology", "worker topology: complete | ring | torus:RxC | exp | hier:GxW | random-perm", &C::topology},
      {"bandwidth", "emulated link bandwidth, e.g. 10Gbps, 100Mbps (empty: the real fabric, nothing added)",
       &C::bandwidth},
      {"latency", "emulated link latency, e.g. 20us, 1ms", &C::latency},
      {"inter-bandwidth", "emulated bandwidth between groups of a hier:GxW topology", &C::inter_bandwidth},
      {"inter-latency", "emulated latency between groups of a hier:GxW topology", &C::inter_latency},
      {"link-efficiency",
       "emulated links carry this fraction of --bandwidth as payload: auto (TCP/IPv4 over Ethernet framing at "
       "--mtu: 0.9415 at 1500), 1 (the nominal rate), or a fraction measured on the real link",
       &C::link_efficiency},
      {"mtu", "MTU in bytes of the emulated links, for --link-efficiency auto (1500; jumbo frames: 9000)", &C::mtu},
      {"model", "architecture of the workload: resnet8|resnet20|resnet32|resnet56|resnet18 (resnet), gpt (transformer)",
       &C::model},
      {"layers", "transformer: number of decoder blocks", &C::layers},
      {"d-model", "transformer: model width", &C::d_model},
      {"heads", "transformer: attention heads (must divide --d-model)", &C::heads},
      {"seq", "transformer: context length in tokens", &C::seq},
      {"vocab", "transformer: vocabulary size (byte-level text: 256)", &C::vocab},
      {"augment", "images: random crop with 4-pixel padding and horizontal flip", &C::augment},
      {"optimizer", "local optimizer: sgd | adamw | auto (adamw for diloco, sgd otherwise)", &C::optimizer},
      {"nesterov", "sgd: Nesterov momentum (needs --momentum > 0)", &C::nesterov},
      {"beta1", "adamw: first-moment decay", &C::beta1},
      {"beta2", "adamw: second-moment decay", &C::beta2},
      {"eps", "adamw: denominator epsilon", &C::eps},
      {"lr-schedule", "learning-rate schedule: constant | cosine | step (after --lr-warmup)", &C::lr_schedule},
      {"lr-warmup", "linear learning-rate warm-up over this many steps (0: none)", &C::lr_warmup},
      {"lr-step-every", "step schedule: multiply the rate by --lr-step-gamma every N steps", &C::lr_step_every},
      {"lr-step-gamma", "step schedule: decay factor", &C::lr_step_gamma},
      {"lr-scaling", "scale --lr by the global batch B=batch*workers: none | linear (B/B0) | sqrt (sqrt(B/B0))",
       &C::lr_scaling},
      {"lr-base-batch", "B0 of --lr-scaling: the global batch --lr was tuned for", &C::lr_base_batch},
      {"post-local", "localsgd: synchronous SGD for the first K steps, then Local SGD (post-local SGD)",
       &C::post_local},
      {"period-schedule",
       "localsgd: how long each round of local steps lasts: constant (--period) | qsr (H = max(--period, "
       "floor((--qsr-alpha / lr)^2)) at each round's start) | adacomm (H = max(1, ceil(sqrt(F/F0) * --period)), F "
       "the last round's training loss)",
       &C::period_schedule},
      {"qsr-alpha", "localsgd --period-schedule qsr: alpha of the quadratic synchronization rule (> 0)", &C::qsr_alpha},
      {"outer-lr", "diloco: outer Nesterov SGD learning rate", &C::outer_lr},
      {"outer-momentum", "diloco: outer Nesterov momentum", &C::outer_momentum},
      {"delay", "dasgd: steps between starting a model average and applying it (0..H)", &C::delay},
      {"pull-alpha", "overlap-local: pull towards the anchor, x <- (1-a)x + a*z", &C::pull_alpha},
      {"slow-momentum", "overlap-local: momentum of the anchor update (0: anchor = average)", &C::slow_momentum},
      {"bucket-mb", "ssgd --overlap: all-reduce buckets of about M MB in backward order (0: one per layer)",
       &C::bucket_mb},
      {"first-bucket-mb",
       "ssgd --overlap: the first bucket (the last layers, launched first) closes at M MB (0: --bucket-mb; PyTorch "
       "DDP: 1.048576)",
       &C::first_bucket_mb},
      {"broadcast-buffers",
       "ssgd of a cost file (--workload profile:FILE): before each forward, worker 0 broadcasts the model's buffers "
       "(BatchNorm statistics) as PyTorch DDP does by default (false: DDP's broadcast_buffers=False)",
       &C::broadcast_buffers},
      {"dpsgd-delay", "dpsgd: 0 = mix after the local step; 1 = exchange x_t while computing g(x_t) (overlapped)",
       &C::dpsgd_delay},
      {"compress",
       "compression of what the variant all-reduces (ssgd: the gradient; the periodic variants: the model's "
       "difference to the last average; diloco: the pseudo-gradient): topk:RATIO | qsgd:bits=B | powersgd:rank=R "
       "(empty: none)",
       &C::compress},
      {"zero-bits", "zero: bits of communicated weight differences and gradients: 32 (exact) or 4 (SDP4Bit)",
       &C::zero_bits},
      {"zero-group", "zero: values per quantisation group (one scale each) with --zero-bits 4", &C::zero_group},
      {"timing-only", "sim: advance the virtual clocks only (no numerics, no accuracy) for throughput predictions",
       &C::timing_only},
      {"compute-scale", "sim: multiply the compute profile by this factor (0.1 models a 10x faster device)",
       &C::compute_scale},
      {"profile-from", "sim: take the compute profile from this stored run id (0: this host's latest calibration)",
       &C::profile_from},
      {"schedule", "dreamddp: print the layer->slot schedule (slot, layers, predicted comm/hidden/exposed time)",
       &C::schedule},
      {"native-floor",
       "sim: every communication lasts at least this host's calibrated native time, as under network emulation "
       "on this host (dsgd-bench validate sets it)",
       &C::native_floor},
      {"compute-jitter",
       "sim: profile = each worker's compute per step drawn from the compute profile's measured per-step "
       "distribution, where it has one (workers wait for each other as on real hardware); replay = with "
       "--profile-from RUN, worker r's step s computes what that run's rank r computed at its step s (ranks and "
       "steps modulo the run's); off = every step at the profile's mean",
       &C::compute_jitter},
      {"fabric",
       "sim: the network of a fabric file, a cluster's collectives as its framework measured them "
       "(tools/export_fabric.py; instead of --bandwidth or this host's calibration)",
       &C::fabric},
      {"ps-mode", "ps: sync (bulk synchronous) | async (each push applied at once) | ssp (stale synchronous)",
       &C::ps_mode},
      {"ps-staleness", "ps --ps-mode ssp: staleness bound s (a worker at clock c waits while the slowest is below c-s)",
       &C::ps_staleness},
      {"ps-shards", "ps: server shards K (0: one per rank colocated, 1 dedicated)", &C::ps_shards},
      {"ps-placement",
       "ps: auto (dedicated on > 1 worker) | colocated (every rank trains, ranks 0..K-1 also serve) | "
       "dedicated (the last K ranks only serve)",
       &C::ps_placement},
      {"ps-one-step-delay",
       "ps: OD-SGD, the next gradient is computed on the parameters read before this push completed",
       &C::ps_one_step_delay},
      {"pull-prob", "palsgd: probability that a worker pulls towards the last global model after a step",
       &C::pull_prob},
      {"period-m", "mtdao: H_m, steps between averages of the optimizer's first moments (0: never, kept local)",
       &C::period_m},
      {"period-v", "mtdao: H_v, steps between averages of AdamW's second moment (0: never, kept local)", &C::period_v},
      {"betas",
       "mtdao: comma-separated decays of momenta at several time scales (AdamW: each first moment's beta1; SGD: "
       "each velocity's momentum); the update uses their mean (empty: one, --beta1 or --momentum)",
       &C::betas},
      {"osp-fraction", "osp: share f of the gradient's values synchronised in stage 1, before the update (0 < f <= 1)",
       &C::osp_fraction},
      {"osp-select",
       "osp: which values are stage 1: magnitude (largest |g| of the last averaged gradient) | static (the first "
       "f*|x| values)",
       &C::osp_select},
      {"dreamddp-fill",
       "dreamddp: fill idle link time with extra syncs of other slots' layers (false: the pure schedule)",
       &C::dreamddp_fill},
      {"gossip-overlap",
       "oldsgd: overlap each gossip round with the next H local steps (false: blocking, dpsgd's mix every H steps)",
       &C::gossip_overlap},
      {"local-threads",
       "lasgd, hogwild: threads per worker, each computing gradients on its own batches and updating the worker's "
       "model asynchronously (1: none)",
       &C::local_threads},
      {"across", "hogwild: exchange across workers: ps (asynchronous parameter server) | gossip (D-PSGD)", &C::across},
      {"pd-staleness", "pdasgd: steps by which a layer's weights in the forward pass may lag its updates (0: ssgd)",
       &C::pd_staleness},
  };
  return fields;
}

const std::vector<RunConfigRange>& run_config_ranges() {
  // Sane ranges: wide enough for any real run, narrow enough that a typo cannot overflow
  // a step count, allocate the machine away or hang a run (docs/cli.md, "Ranges").
  constexpr long double kSteps = kRunConfigMaxSteps;
  constexpr long double kInt63 = 9223372036854775807.0L;  // 2^63 - 1: SQLite stores int64
  static const std::vector<RunConfigRange> ranges = {
      {"period", 1, 1e6},
      {"batch", 1, 1 << 24},
      {"lr", 0, 1e12},  // 0: not given (the optimizer's default); huge rates are how the divergence tests diverge
      {"momentum", 0, 1, false, true},
      {"weight-decay", 0, 1e3},
      {"steps", 0, kSteps},
      {"epochs", 0, 1e6},
      {"workers", 1, kRunConfigMaxWorkers},
      {"seed", 0, kInt63},
      {"eval-every", 0, kSteps},
      {"eval-subset", 0, 1 << 30},
      {"time-limit", 0, 1e9},
      {"warmup", 0, kSteps},
      {"threads", 1, 256},
      {"mtu", 68, 65536},  // IPv4 minimum to the largest IP packet (network_tcp_goodput_fraction)
      {"layers", 1, 1024},
      {"d-model", 1, 65536},
      {"heads", 1, 4096},
      {"seq", 1, 1 << 20},
      {"vocab", 2, 1 << 24},
      {"beta1", 0, 1, false, true},
      {"beta2", 0, 1, false, true},
      {"eps", 0, 1, true},
      {"lr-warmup", 0, kSteps},
      {"lr-step-every", 0, kSteps},
      {"lr-step-gamma", 0, 1, true},
      {"lr-base-batch", 1, 1 << 30},
      {"post-local", 0, kSteps},
      {"qsr-alpha", 0, 1e6},
      {"outer-lr", 0, 1e12, true},
      {"outer-momentum", 0, 1, false, true},
      {"delay", 0, 1e6},
      {"pull-alpha", 0, 1},
      {"slow-momentum", 0, 1, false, true},
      {"bucket-mb", 0, 1e6},
      {"first-bucket-mb", 0, 1e6},
      {"dpsgd-delay", 0, 1},
      {"zero-bits", 4, 32},
      {"zero-group", 1, 1 << 20},
      {"compute-scale", 0, 1e6, true},
      {"profile-from", 0, kInt63},
      {"ps-staleness", -1, kSteps},
      {"ps-shards", 0, 1 << 20},
      {"pull-prob", 0, 1},
      {"period-m", 0, 1e6},
      {"period-v", 0, 1e6},
      {"osp-fraction", 0, 1, true},
      {"local-threads", 1, 64},
      {"pd-staleness", 0, 1000},
  };
  return ranges;
}

const RunConfigRange* run_config_range(const std::string& key) {
  for (const auto& r : run_config_ranges())
    if (key == r.key) return &r;
  return nullptr;
}

void run_config_check_ranges(const RunConfig& cfg) {
  for (const auto& field : run_config_fields()) {
    const RunConfigRange* range = run_config_range(field.key);
    std::visit(
        [&](auto member) {
          using T = std::remove_reference_t<decltype(cfg.*member)>;
          if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
            if (!range) return;  // every numeric field has one (test_run_config checks)
            const T value = cfg.*member;
            const long double v = static_cast<long double>(value);
            const bool nan = v != v;
            const bool below = range->lo_open ? !(v > range->lo) : !(v >= range->lo);
            const bool above = range->hi_open ? !(v < range->hi) : !(v <= range->hi);
            if (!nan && !below && !above) return;
            std::string bounds;
            if constexpr (std::is_integral_v<T>) {
              bounds = fmt::format("{}..{}", static_cast<int64_t>(range->lo), static_cast<int64_t>(range->hi));
            } else {
              bounds = fmt::format("{}{:g}, {:g}{}", range->lo_open ? '(' : '[', static_cast<double>(range->lo),
                                   static_cast<double>(range->hi), range->hi_open ? ')' : ']');
            }
            DSGD_THROW(InputError, fmt::format("pass --{} in {} (docs/cli.md lists every range)", field.key, bounds),
                       "--{}: must be in {} (got {})", field.key, bounds, value);
          }
        },
        field.member);
  }
}

namespace {

std::string normalize_key(std::string key) {
  for (auto& ch : key)
    if (ch == '_') ch = '-';
  return key;
}

const RunConfigField* find_field(const std::string& key) {
  for (const auto& f : run_config_fields())
    if (key == f.key) return &f;
  return nullptr;
}

std::string known_keys() {
  std::string out;
  for (const auto& f : run_config_fields()) {
    if (!out.empty()) out += ", ";
    out += f.key;
  }
  return out;
}

void set_from_json(RunConfig& cfg, const RunConfigField& field, const nlohmann::json& v, const std::string& origin) {
  auto wrong = [&](const char* expected) {
    DSGD_THROW(InputError, fmt::format("write {} as {}", field.key, expected),
               "{}: key '{}' has the wrong type ({}; expected {})", origin, field.key, v.type_name(), expected);
  };
  std::visit(
      [&](auto member) {
        using T = std::remove_reference_t<decltype(cfg.*member)>;
        if constexpr (std::is_same_v<T, std::string>) {
          if (!v.is_string()) wrong("a string");
          cfg.*member = v.get<std::string>();
        } else if constexpr (std::is_same_v<T, bool>) {
          if (!v.is_boolean()) wrong("true or false");
          cfg.*member = v.get<bool>();
        } else if constexpr (std::is_same_v<T, double>) {
          if (!v.is_number()) wrong("a number");
          cfg.*member = v.get<double>();
        } else if constexpr (std::is_same_v<T, uint64_t>) {
          // TOML has only signed integers (toml_to_json gives int64): accept those ≥ 0 too.
          const bool non_negative = v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
          if (!non_negative) wrong("a non-negative integer");
          cfg.*member = v.is_number_unsigned() ? v.get<uint64_t>() : static_cast<uint64_t>(v.get<int64_t>());
        } else {
          if (!v.is_number_integer()) wrong("an integer");
          cfg.*member = v.get<int64_t>();
        }
      },
      field.member);
}

nlohmann::json toml_to_json(const toml::node& node, const std::string& origin, const std::string& key) {
  if (auto s = node.as_string()) return s->get();
  if (auto i = node.as_integer()) return i->get();
  if (auto f = node.as_floating_point()) return f->get();
  if (auto b = node.as_boolean()) return b->get();
  DSGD_THROW(InputError, "use a string, a number or a boolean", "{}: key '{}' has an unsupported TOML type", origin,
             key);
}

}  // namespace

void run_config_apply_json(RunConfig& cfg, const nlohmann::json& obj, const std::string& origin) {
  if (!obj.is_object())
    DSGD_THROW(InputError, "write the configuration as one object of key: value pairs",
               "{}: expected an object at the top level", origin);
  std::vector<std::string> seen;  // normalised: weight_decay and weight-decay are one key
  for (const auto& [raw_key, value] : obj.items()) {
    const auto key = normalize_key(raw_key);
    const auto* field = find_field(key);
    if (!field)
      DSGD_THROW(InputError, fmt::format("known keys: {}", known_keys()), "{}: unknown key '{}'", origin, raw_key);
    if (std::find(seen.begin(), seen.end(), key) != seen.end())
      DSGD_THROW(InputError, "give each key once (dashes and underscores name the same key)",
                 "{}: key '{}' is given twice ('{}' names it too)", origin, key, raw_key);
    seen.push_back(key);
    set_from_json(cfg, *field, value, origin);
    // 0 means "unset" for steps, epochs and lr internally, so an explicit 0 is an error here.
    if ((key == "steps" && cfg.steps <= 0) || (key == "epochs" && !(cfg.epochs > 0)) || (key == "lr" && cfg.lr == 0))
      DSGD_THROW(InputError, fmt::format("give a positive number of {}", key), "{}: key '{}' must be positive (got {})",
                 origin, raw_key, value.dump());
  }
}

void run_config_check_nesting(const std::string& text, const std::string& origin, bool toml) {
  if (text.size() > kConfigMaxBytes)
    DSGD_THROW(InputError, "a configuration is a few flat key = value lines; check the file given to --config",
               "{}: more than the {} bytes a config file may have", origin, kConfigMaxBytes);
  // One pass outside strings and comments: the depth of [ and { across the file, and the
  // dots on each line (dotted keys: a.b.c = 1; numbers have at most a few).
  size_t line = 1, depth = 0, dots = 0;
  auto refuse = [&](const char* what) {
    DSGD_THROW(InputError, "write flat keys with one value each (key = value), as the flags are",
               "{}:{}: more than {} {}", origin, line, kConfigMaxNesting, what);
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      dots = 0;
    } else if (c == '#' && toml) {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
    } else if (c == '"' || (c == '\'' && toml)) {
      // A string: "..." with backslash escapes, '...' literal (TOML), or a triple-quoted
      // multi-line string (TOML).
      const bool triple = toml && text.compare(i, 3, std::string(3, c)) == 0;
      const std::string close = triple ? std::string(3, c) : std::string(1, c);
      size_t j = i + close.size();
      while (j < text.size()) {
        if (text[j] == '\\' && c == '"') {
          j += 2;
          continue;
        }
        if (text[j] == '\n') {
          if (!triple) break;  // an unterminated string: the parser reports it
          ++line;
        }
        if (text.compare(j, close.size(), close) == 0) break;
        ++j;
      }
      if (j < text.size() && text[j] == '\n') {
        i = j - 1;  // the newline is counted by the loop
      } else {
        i = std::min(text.size(), j + close.size()) - 1;
      }
    } else if (c == '[' || c == '{') {
      if (++depth > kConfigMaxNesting) refuse("nested brackets");
    } else if (c == ']' || c == '}') {
      if (depth > 0) --depth;
    } else if (c == '.' && toml) {
      if (++dots > kConfigMaxNesting) refuse("dots on one line (a dotted key of that many parts?)");
    }
  }
}

namespace {

// Parses JSON, refusing a key given twice in one object (nlohmann keeps the last silently).
nlohmann::json parse_json_unique_keys(const std::string& text, const std::string& origin) {
  std::vector<std::vector<std::string>> open;  // keys of each object being parsed
  auto callback = [&](int /*depth*/, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (event == E::object_start) {
      open.emplace_back();
    } else if (event == E::object_end) {
      if (!open.empty()) open.pop_back();
    } else if (event == E::key && !open.empty()) {
      const std::string key = parsed.get<std::string>();
      auto& keys = open.back();
      if (std::find(keys.begin(), keys.end(), key) != keys.end())
        DSGD_THROW(InputError, "give each key once", "{}: key '{}' appears more than once", origin, key);
      keys.push_back(key);
    }
    return true;
  };
  return nlohmann::json::parse(text, callback);
}

}  // namespace

void run_config_load_file(RunConfig& cfg, const std::string& path) {
  std::ifstream in(path);
  if (!in) DSGD_THROW(InputError, "check the path given to --config", "cannot read config file '{}'", path);
  // At most one byte past the limit is read (a FIFO or /dev/zero never ends).
  std::string text(kConfigMaxBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  const bool is_toml = path.size() >= 5 && path.compare(path.size() - 5, 5, ".toml") == 0;
  run_config_load_text(cfg, text, path, is_toml);
}

void run_config_load_text(RunConfig& cfg, const std::string& text, const std::string& path, bool is_toml) {
  run_config_check_nesting(text, path, is_toml);
  nlohmann::json obj;
  if (is_toml) {
    toml::table table;
    try {
      table = toml::parse(text, path);
    } catch (const toml::parse_error& e) {
      DSGD_THROW(InputError, "fix the TOML syntax", "{}:{}: {}", path, e.source().begin.line,
                 std::string(e.description()));
    }
    obj = nlohmann::json::object();
    for (const auto& [k, node] : table) obj[std::string(k.str())] = toml_to_json(node, path, std::string(k.str()));
  } else {
    try {
      obj = parse_json_unique_keys(text, path);
    } catch (const nlohmann::json::exception& e) {
      // parse_error, and out_of_range for a number such as 1e999 (found by fuzz_config).
      DSGD_THROW(InputError, "fix the JSON syntax (or name the file .toml for TOML)", "{}: {}", path, e.what());
    }
  }
  run_config_apply_json(cfg, obj, path);
}

nlohmann::json run_config_to_json(const RunConfig& cfg) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& f : run_config_fields()) std::visit([&](auto member) { out[f.key] = cfg.*member; }, f.member);
  // 0 means "unset" for these three; leave them out so the JSON loads back.
  if (cfg.steps == 0) out.erase("steps");
  if (cfg.epochs == 0) out.erase("epochs");
  if (cfg.lr == 0) out.erase("lr");
  return out;
}

bool RunConfig::given(const char* key) const {
  return std::find(given_keys.begin(), given_keys.end(), key) != given_keys.end();
}

bool run_config_ps_dedicated(const RunConfig& cfg) {
  return cfg.ps_placement == "dedicated" || (cfg.ps_placement == "auto" && cfg.workers > 1);
}

int64_t run_config_ps_shards(const RunConfig& cfg, int64_t n) {
  if (cfg.ps_shards > 0) return std::min<int64_t>(cfg.ps_shards, int64_t(1) << 20);
  return run_config_ps_dedicated(cfg) ? 1 : n;
}

void run_config_mark_given(RunConfig& cfg, const std::string& key) {
  std::string k = key;
  std::replace(k.begin(), k.end(), '_', '-');
  if (!cfg.given(k.c_str())) cfg.given_keys.push_back(std::move(k));
}

void run_config_copy_field(RunConfig& dst, const RunConfig& src, const RunConfigField& field) {
  std::visit([&](auto member) { dst.*member = src.*member; }, field.member);
}

void run_config_validate_generic(const RunConfig& cfg) {
  auto fail = [](const char* flag, const std::string& what, const std::string& hint) {
    DSGD_THROW(InputError, hint, "--{}: {}", flag, what);
  };
  // Single-field limits are the range table's (run_config_ranges, checked last by
  // run_config_check_ranges); only what a range cannot say is checked here.
  if (!(cfg.lr >= 0) || !std::isfinite(cfg.lr))  // 0: not given (the optimizer's default)
    fail("lr", fmt::format("must be > 0 (got {})", cfg.lr), "pass a positive learning rate");
  if (cfg.steps > 0 && cfg.epochs > 0)
    fail("steps", "and --epochs are both set", "pass only one of --steps and --epochs");
  if (cfg.db.empty()) fail("db", "is empty", "pass a path such as ./dsgd.db");
  if (cfg.heads >= 1 && cfg.d_model % cfg.heads != 0)
    fail("heads", fmt::format("{} does not divide --d-model {}", cfg.heads, cfg.d_model),
         "pick --heads that divides --d-model (e.g. --d-model 256 --heads 4)");
  if (cfg.timing_only && !cfg.target.empty())
    fail("target", "cannot be reached in a --timing-only run: it computes no accuracy or loss",
         "drop --target, or run with numerics (without --timing-only)");
  if (cfg.stop_at_target && cfg.target.empty())
    fail("stop-at-target", "needs --target: it ends the run when the target is reached",
         "add e.g. --target acc=0.80, or drop --stop-at-target");
  if (cfg.backend.empty()) fail("backend", "is empty", "pass a backend (dsgd-bench list backends)");
  // Which backends exist and what each allows (--timing-only, --profile-from, ...) is checked
  // against the backend table (cluster/backends.hpp) by config_validate.
}

void run_config_validate(const RunConfig& cfg) {
  run_config_validate_generic(cfg);
  run_config_check_ranges(cfg);  // last: the checks above give the more specific messages
}

}  // namespace dsgd
