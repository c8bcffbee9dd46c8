// Field table of RunConfig, JSON/TOML config-file loading with strict key and type
// checks, and value validation. See run_config.hpp.
#include "core/run_config.hpp"

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include <toml++/toml.h>

#include "core/errors.hpp"

namespace dsgd {

const std::vector<RunConfigField>& run_config_fields() {
  using C = RunConfig;
  static const std::vector<RunConfigField> fields = {
      {"workload", "workload to train (dsgd-bench list workloads)", &C::workload},
      {"dataset", "dataset spec: fashion-mnist | synthetic:n=..,d=.. | libsvm:PATH (dsgd-bench list datasets)",
       &C::dataset},
      {"algo", "SGD variant (dsgd-bench list algorithms)", &C::algo},
      {"period", "H: local steps between model averages (localsgd)", &C::period},
      {"batch", "batch size per worker", &C::batch},
      {"lr", "learning rate", &C::lr},
      {"momentum", "SGD momentum (0 = plain SGD)", &C::momentum},
      {"weight-decay", "L2 weight decay (the SVM's regulariser)", &C::weight_decay},
      {"steps", "training steps per worker (overrides --epochs)", &C::steps},
      {"epochs", "epochs over each worker's shard (used when --steps is 0; default 1)", &C::epochs},
      {"workers", "number of workers (MPI ranks); outside mpiexec, N>1 re-launches through mpiexec -n N",
       &C::workers},
      {"backend", "execution backend: mpi", &C::backend},
      {"seed", "random seed (data order, initialisation, synthetic data)", &C::seed},
      {"eval-every", "evaluate every K steps (0 = about 10 evaluations)", &C::eval_every},
      {"target", "target for time-to-target: acc=0.80 or loss=0.35", &C::target},
      {"db", "SQLite results database", &C::db},
      {"tag", "free-text tag stored with the run", &C::tag},
      {"warmup", "untimed warm-up steps at the start", &C::warmup},
      {"threads", "BLAS threads per worker", &C::threads},
      {"hostfile", "MPI hostfile for multi-machine runs (passed to mpiexec -f)", &C::hostfile},
      {"save-params", "write the final averaged parameters (raw float32) to this file", &C::save_params},
      {"timers", "per-step instrumentation (disable only to measure its overhead)", &C::timers},
      {"overlap", "ssgd: launch each layer's gradient all-reduce (non-blocking) from backward, wait before the update",
       &C::overlap},
      {"straggler",
       "injected compute slowdowns, ';'-separated: fixed:rank=R,delay=20ms | fixed:rank=R,factor=2 | "
       "random:p=0.05,delay=30ms | lognormal:sigma=0.3 | pareto:alpha=2,scale=5ms | periodic:rank=R,every=50,delay=200ms",
       &C::straggler},
      {"topology", "worker topology: complete | ring | torus:RxC | exp | hier:GxW | random-perm", &C::topology},
      {"bandwidth", "emulated link bandwidth, e.g. 10Gbps, 100Mbps (empty: the real fabric, nothing added)",
       &C::bandwidth},
      {"latency", "emulated link latency, e.g. 20us, 1ms", &C::latency},
      {"inter-bandwidth", "emulated bandwidth between groups of a hier:GxW topology", &C::inter_bandwidth},
      {"inter-latency", "emulated latency between groups of a hier:GxW topology", &C::inter_latency},
      {"timing-only", "sim: advance the virtual clocks only (no numerics, no accuracy) for throughput predictions",
       &C::timing_only},
      {"compute-scale", "sim: multiply the compute profile by this factor (0.1 models a 10x faster device)",
       &C::compute_scale},
      {"profile-from", "sim: take the compute profile from this stored run id (0: this host's latest calibration)",
       &C::profile_from},
  };
  return fields;
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

void set_from_json(RunConfig& cfg, const RunConfigField& field, const nlohmann::json& v,
                   const std::string& origin) {
  auto wrong = [&](const char* expected) {
    DSGD_THROW(InputError, fmt::format("write {} as {}", field.key, expected),
               "{}: key '{}' has the wrong type ({}; expected {})", origin, field.key, v.type_name(),
               expected);
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
          if (!v.is_number_unsigned()) wrong("a non-negative integer");
          cfg.*member = v.get<uint64_t>();
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
  DSGD_THROW(InputError, "use a string, a number or a boolean", "{}: key '{}' has an unsupported TOML type",
             origin, key);
}

}  // namespace

void run_config_apply_json(RunConfig& cfg, const nlohmann::json& obj, const std::string& origin) {
  if (!obj.is_object())
    DSGD_THROW(InputError, "write the configuration as one object of key: value pairs",
               "{}: expected an object at the top level", origin);
  for (const auto& [raw_key, value] : obj.items()) {
    const auto key = normalize_key(raw_key);
    const auto* field = find_field(key);
    if (!field)
      DSGD_THROW(InputError, fmt::format("known keys: {}", known_keys()), "{}: unknown key '{}'", origin,
                 raw_key);
    set_from_json(cfg, *field, value, origin);
    // 0 means "unset" for steps and epochs internally, so an explicit 0 is an error here.
    if ((key == "steps" && cfg.steps <= 0) || (key == "epochs" && !(cfg.epochs > 0)))
      DSGD_THROW(InputError, fmt::format("give a positive number of {}", key), "{}: key '{}' must be positive (got {})",
                 origin, raw_key, value.dump());
  }
}

void run_config_load_file(RunConfig& cfg, const std::string& path) {
  std::ifstream in(path);
  if (!in)
    DSGD_THROW(InputError, "check the path given to --config", "cannot read config file '{}'", path);
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string text = buf.str();
  const bool is_toml = path.size() >= 5 && path.compare(path.size() - 5, 5, ".toml") == 0;
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
      obj = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
      DSGD_THROW(InputError, "fix the JSON syntax (or name the file .toml for TOML)", "{}: {}", path, e.what());
    }
  }
  run_config_apply_json(cfg, obj, path);
}

nlohmann::json run_config_to_json(const RunConfig& cfg) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& f : run_config_fields())
    std::visit([&](auto member) { out[f.key] = cfg.*member; }, f.member);
  // 0 means "unset" for these two; leave them out so the JSON loads back.
  if (cfg.steps == 0) out.erase("steps");
  if (cfg.epochs == 0) out.erase("epochs");
  return out;
}

void run_config_copy_field(RunConfig& dst, const RunConfig& src, const RunConfigField& field) {
  std::visit([&](auto member) { dst.*member = src.*member; }, field.member);
}

void run_config_validate(const RunConfig& cfg) {
  auto fail = [](const char* flag, const std::string& what, const std::string& hint) {
    DSGD_THROW(InputError, hint, "--{}: {}", flag, what);
  };
  if (cfg.workers < 1) fail("workers", fmt::format("must be at least 1 (got {})", cfg.workers), "pass --workers 1 or more");
  if (cfg.workers > 4096) fail("workers", fmt::format("{} is more than 4096", cfg.workers), "use fewer workers");
  if (cfg.batch < 1) fail("batch", fmt::format("must be at least 1 (got {})", cfg.batch), "pass a positive batch size");
  if (cfg.period < 1) fail("period", fmt::format("must be at least 1 (got {})", cfg.period), "pass a positive period H");
  if (cfg.steps < 0) fail("steps", fmt::format("must be positive (got {})", cfg.steps), "pass a positive number of steps");
  if (!(cfg.epochs >= 0) || !std::isfinite(cfg.epochs))
    fail("epochs", fmt::format("must be positive (got {})", cfg.epochs), "pass a positive number of epochs");
  if (!(cfg.lr > 0) || !std::isfinite(cfg.lr)) fail("lr", fmt::format("must be > 0 (got {})", cfg.lr), "pass a positive learning rate");
  if (!(cfg.momentum >= 0 && cfg.momentum < 1))
    fail("momentum", fmt::format("must be in [0, 1) (got {})", cfg.momentum), "pass e.g. --momentum 0.9");
  if (!(cfg.weight_decay >= 0) || !std::isfinite(cfg.weight_decay))
    fail("weight-decay", fmt::format("must be >= 0 (got {})", cfg.weight_decay), "pass e.g. --weight-decay 1e-4");
  if (cfg.eval_every < 0) fail("eval-every", fmt::format("must be >= 0 (got {})", cfg.eval_every), "pass 0 for automatic");
  if (cfg.warmup < 0) fail("warmup", fmt::format("must be >= 0 (got {})", cfg.warmup), "pass 0 for no warm-up");
  if (cfg.threads < 1 || cfg.threads > 256) fail("threads", fmt::format("must be in 1..256 (got {})", cfg.threads), "pass e.g. --threads 1");
  if (cfg.backend != "mpi" && cfg.backend != "sim")
    fail("backend", fmt::format("unknown backend '{}'", cfg.backend), "available: mpi, sim (nccl is planned)");
  if (cfg.steps > 0 && cfg.epochs > 0)
    fail("steps", "and --epochs are both set", "pass only one of --steps and --epochs");
  if (cfg.overlap && cfg.algo != "ssgd")
    fail("overlap", fmt::format("applies to --algo ssgd only (got {})", cfg.algo), "drop --overlap or use --algo ssgd");
  if (cfg.db.empty()) fail("db", "is empty", "pass a path such as ./dsgd.db");
  if (cfg.timing_only && cfg.backend != "sim")
    fail("timing-only", fmt::format("needs --backend sim (got {})", cfg.backend), "add --backend sim");
  if (cfg.timing_only && !cfg.target.empty())
    fail("target", "cannot be reached in a --timing-only run: it computes no accuracy or loss",
         "drop --target, or run with numerics (without --timing-only)");
  if (!(cfg.compute_scale > 0) || !std::isfinite(cfg.compute_scale))
    fail("compute-scale", fmt::format("must be > 0 (got {})", cfg.compute_scale), "pass e.g. --compute-scale 0.1");
  if (cfg.backend != "sim" && (cfg.compute_scale != 1.0 || cfg.profile_from != 0))
    fail(cfg.profile_from != 0 ? "profile-from" : "compute-scale", "applies to --backend sim only",
         "add --backend sim, or drop the flag");
  if (cfg.profile_from < 0)
    fail("profile-from", fmt::format("must be a run id (got {})", cfg.profile_from), "pass an id from dsgd-bench runs");
}

}  // namespace dsgd
