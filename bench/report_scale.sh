#!/usr/bin/env bash
# How the HTML report scales with the number of runs: databases of 10, 100 and 1,000 real
# runs (timing-only sim runs of a 12-configuration grid: ssgd and localsgd H 4/16, batch 16/64,
# 4/16 workers, a log-normal straggler so repetitions differ; from one-rank profile runs),
# each spread over commits of 2 repetitions per configuration (set with sqlite3 as CI would have
# recorded them), with a planted +40 % compute slowdown of one configuration from the middle
# commit on. For each size it builds the runs report and the --history report and prints their
# file size, the generation time, and Chromium's time to load and lay out the page
# (performance.now() at the end of the page's script, read back with --dump-dom; and the wall
# time of the whole headless --dump-dom call). Screenshots are left in OUT for a look.
#   bash bench/report_scale.sh [BIN=build/dsgd-bench] [OUT=report-scale] [SIZES="10 100 1000"]
set -euo pipefail
BIN=$(realpath "${1:-build/dsgd-bench}")
OUT=$(realpath -m "${2:-report-scale}")
SIZES=${3:-"10 100 1000"}
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
mkdir -p "$OUT"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
data="synthetic:n=4000,d=200,classes=4,noise=0.02,test=800"

chrome() {
  timeout 300 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --disable-dev-shm-usage \
    --user-data-dir="$work/profile" --proxy-server=127.0.0.1:9 --proxy-bypass-list='<-loopback>' "$@" 2> /dev/null
}

# The grid: one configuration a line, as run flags.
grid=()
for w in 4 16; do
  for b in 16 64; do
    grid+=("--algo ssgd --workers $w --batch $b")
    for h in 4 16; do grid+=("--algo localsgd --period $h --workers $w --batch $b"); done
  done
done

# One profile run per batch (a timing-only run reads the compute of its own batch).
profile_db=$work/profile.db
declare -A profile
for b in 16 64; do
  "$BIN" run --dataset "$data" --steps 20 --batch $b --db "$profile_db" > "$work/prof.out"
  profile[$b]=$(tail -n 1 "$work/prof.out" | sed 's/run_id=//')
done

make_db() {  # runs, db
  local n=$1 db=$2 made=0 rep=0 commits scale
  cp "$profile_db" "$db"
  commits=$(((n + 2 * ${#grid[@]} - 1) / (2 * ${#grid[@]})))
  while ((made < n)); do
    for g in "${grid[@]}"; do
      ((made < n)) || break
      commit=$((rep / 2 + 1))
      scale=1
      # The planted slowdown: localsgd H=16, 16 workers, batch 64, from the middle commit on.
      [[ "$g" == "--algo localsgd --period 16 --workers 16 --batch 64" ]] && ((commit > commits / 2)) && scale=1.4
      # shellcheck disable=SC2086
      "$BIN" run --backend sim --profile-from "${profile[${g##* }]}" --timing-only true --dataset "$data" --steps 40 --db "$db" \
        --straggler "lognormal:sigma=0.3" --compute-scale "$scale" --seed $((made + 1)) --tag "c$commit" $g \
        > /dev/null
      made=$((made + 1))
    done
    rep=$((rep + 1))
  done
  sqlite3 "$db" "UPDATE runs SET git_commit = printf('%08x', 2654435761 * CAST(substr(tag, 2) AS INTEGER) % 4294967296) || substr(tag, 2) WHERE tag LIKE 'c%'; PRAGMA foreign_keys = ON; DELETE FROM runs WHERE id IN (${profile[16]}, ${profile[64]});"
}

stamp_script='<script>document.body.setAttribute("data-loaded-ms",String(Math.round(performance.now())))</script>'

measure() {  # html file: "render wall s, loaded ms"
  local html=$1 t0 t1 ms
  cp "$html" "$work/stamped.html"
  sed -i "s#</body></html>#${stamp_script}</body></html>#" "$work/stamped.html"
  t0=$(date +%s.%N)
  chrome --dump-dom "file://$work/stamped.html" > "$work/dom.html"
  t1=$(date +%s.%N)
  ms=$(grep -o 'data-loaded-ms="[0-9]*"' "$work/dom.html" | grep -o '[0-9]*' || echo "?")
  grep -q 'data-errors=' "$work/dom.html" && echo "warning: script errors in $html" >&2
  echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') $ms"
}

printf '| runs | report | size (KB) | generation (s) | Chromium: script done at (ms) | Chromium --dump-dom wall (s) |\n'
printf '|---:|---|---:|---:|---:|---:|\n'
for n in $SIZES; do
  db=$work/r$n.db
  make_db "$n" "$db"
  for kind in runs history; do
    html=$OUT/report-$n-$kind.html
    extra=()
    [ "$kind" = history ] && extra=(--history --metric step_time)
    t0=$(date +%s.%N)
    "$BIN" report --db "$db" --format html "${extra[@]}" -o "$html" 2> /dev/null
    t1=$(date +%s.%N)
    gen=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
    kb=$(($(stat -c %s "$html") / 1024))
    render="- -"
    if [ -n "$CHROMIUM" ]; then
      render=$(measure "$html")
      chrome --window-size=1400,2000 --screenshot="$OUT/report-$n-$kind.png" "file://$html" > /dev/null || true
    fi
    read -r wall ms <<< "$render"
    printf '| %s | %s | %s | %s | %s | %s |\n' "$n" "$kind" "$kb" "$gen" "$ms" "$wall"
  done
done
[ -n "$CHROMIUM" ] || echo "chromium not found: no render times, no screenshots"
echo "reports and screenshots: $OUT"
