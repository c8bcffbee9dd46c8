# Shared helpers of the integration tests (sourced; not a test itself).
# Each test is called as: bash TEST.sh PATH/TO/dsgd-bench WORKDIR
set -euo pipefail
BIN="$1"
WORK="$2"
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"
MPIEXEC="${DSGD_MPIEXEC:-mpiexec}"
# A small, fast dataset for runs that only need to exercise the machinery.
SMALL="synthetic:n=4000,d=200,classes=4,noise=0.02,test=800"

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# last_run_id OUTPUT_FILE: the id from the required last line `run_id=<id>`.
last_run_id() {
  local last
  last=$(tail -n 1 "$1")
  [[ "$last" =~ ^run_id=([0-9]+)$ ]] || fail "last line of output is not run_id=<id>: '$last'"
  echo "${BASH_REMATCH[1]}"
}

# expect_error PATTERN CMD...: CMD is refused as bad input: exit code 2 (EXPECT_RC=1 for an
# environment failure, e.g. an unopenable database: EXPECT_RC=1 expect_error ...), stderr matching
# PATTERN (grep -E) with one error message (at most 2 lines saying "error": the message and
# its hint). A test may define expect_error_also (called with the same arguments) for a check
# of its own, e.g. that the database is unchanged. CMD's output is left in out.txt / err.txt.
expect_error() {
  local pattern="$1"
  shift
  local rc=0
  "$@" > out.txt 2> err.txt || rc=$?
  [ "$rc" -eq "${EXPECT_RC:-2}" ] || { cat out.txt err.txt; fail "expected exit ${EXPECT_RC:-2}, got $rc: $*"; }
  grep -Eq -e "$pattern" err.txt || { cat out.txt err.txt; fail "stderr does not match '$pattern': $*"; }
  [ "$(grep -c 'error' err.txt)" -le 2 ] || { cat err.txt; fail "more than one error message: $*"; }
  if declare -F expect_error_also > /dev/null; then expect_error_also "$pattern" "$@"; fi
  echo "ok: $* -> $(head -n 1 err.txt)"
}

# Accuracy tests on the real Fashion-MNIST: skip_without_fashion_mnist exits 0 with a note when
# the files are not installed; `acc FLAGS...` trains with the caller's `common` flags (which
# must name --db t.db) and prints the run's last evaluated test accuracy.
skip_without_fashion_mnist() {
  if ! "$BIN" run --dataset fashion-mnist --steps 1 --batch 8 --db probe.db > /dev/null 2>&1; then
    echo "SKIP: fashion-mnist is not installed (scripts/install-deps.sh)"
    exit 0
  fi
}
acc() {
  "$BIN" run "${common[@]}" "$@" > acc.out || { cat acc.out; fail "run failed: $*"; }
  sql t.db "select test_acc from evals where run_id=$(last_run_id acc.out) order by step desc limit 1"
}

# commit_history_fixture COMMITS SLOW_FROM: in t.db, a CI history of COMMITS commits x 2
# repetitions of two timing-only sim cases from one measured profile (run id in P): 'w4 b16',
# whose compute gets 30 % slower from commit SLOW_FROM on (--compute-scale, which the case's
# key ignores, as a code change would be), and the steady 'w2 b16'. The runs carry the git
# commits commit1..commitCOMMITS as CI would have recorded them (the profile run: 'profile').
commit_history_fixture() {
  local commits="$1" slow_from="$2" c rep scale
  "$BIN" run --dataset "$SMALL" --steps 20 --batch 16 --db t.db > prof.out || fail "profile run failed"
  P=$(last_run_id prof.out)
  local sim=(--backend sim --profile-from "$P" --timing-only true --dataset "$SMALL" --steps 20 --batch 16 --db t.db
    --straggler "lognormal:sigma=0.2")
  for ((c = 1; c <= commits; ++c)); do
    scale=1
    ((c >= slow_from)) && scale=1.3
    for rep in 1 2; do
      "$BIN" run "${sim[@]}" --workers 4 --compute-scale "$scale" --seed $((c * 10 + rep)) --tag "c$c" > /dev/null ||
        fail "run of commit $c failed"
      "$BIN" run "${sim[@]}" --workers 2 --seed $((c * 10 + rep)) --tag "c$c" > /dev/null || fail "steady run failed"
    done
  done
  sql t.db "UPDATE runs SET git_commit = 'commit' || substr(tag, 2) WHERE tag LIKE 'c%'"
  sql t.db "UPDATE runs SET git_commit = 'profile' WHERE id = $P"
}

# sql DB QUERY: one value.
sql() { sqlite3 "$1" "$2"; }

# compare_params A B TOL: max |a-b| / (1 + |b|) over two raw float32 files.
compare_params() {
  local max
  max=$(paste <(od -An -v -tf4 -w4 "$1") <(od -An -v -tf4 -w4 "$2") |
    awk -v tol="$3" 'BEGIN{m=0} {d=$1-$2; if(d<0)d=-d; b=$2; if(b<0)b=-b; r=d/(1+b); if(r>m)m=r} END{printf "%.3g\n", m}')
  echo "max relative difference: $max (tolerance $3)"
  awk -v m="$max" -v tol="$3" 'BEGIN{exit !(m<=tol)}'
}

# Compression tests: `run OUT FLAGS...` trains with the caller's `common` flags and saves the
# final parameters to OUT; `last COLUMN` reads the newest summary of t.db; `expect_bytes NAME W`
# checks that run's recorded bytes per step equal W.
run() {
  local out="$1"
  shift
  "$BIN" run "${common[@]}" "$@" --save-params "$out" > "$out.txt" 2>&1 || { cat "$out.txt"; fail "run failed: $*"; }
}
last() { sql t.db "select $1 from summaries order by run_id desc limit 1"; }
expect_bytes() {
  local got
  got=$(last bytes_sent_per_step)
  awk -v g="$got" -v w="$2" 'BEGIN{d=g-w; if(d<0)d=-d; exit !(d < 1e-6)}' ||
    fail "$1: recorded $got bytes per step, expected $2"
  echo "ok: $1 sends $got bytes per step"
}
