# bench.sh: what the benchmark scripts share (scripts/bench.sh,
# bench_actors.sh, bench_collectives.sh, bench_moe.sh), sourced from the
# repository root.

# bench_out: sets out to $OUT, created if missing, where the raw outputs
# are kept; without OUT, to a temporary directory removed at exit.
bench_out() {
  out=${OUT:-}
  if [ -z "$out" ]; then
    out=$(mktemp -d)
    trap 'rm -rf "$out"' EXIT
  fi
  mkdir -p "$out"
}

# host: a line naming this machine's cores and CPU model, the time and the
# load, printed before each run (figures taken under load do not compare).
host() { echo "== $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(date -u +%H:%M:%SZ), load $(cut -d' ' -f1-3 /proc/loadavg)"; }

# MEDIAN_AWK is awk text to put before a side-by-side table's program,
# which runs with -v out=DIR -v rounds=N: med(base, name) is the median of
# figure name (lines "name: value unit") over the files DIR/base.R.txt,
# R = 1..N, or "" where none has it; unit[name] is its unit.
# shellcheck disable=SC2016
MEDIAN_AWK='
  function med(base, name,   r, f, line, v, n, i, j, t, a) {
    n = 0
    for (r = 1; r <= rounds; r++) {
      f = out "/" base "." r ".txt"
      while ((getline line < f) > 0) {
        if (line ~ /^[A-Za-z_.0-9]+: [-0-9.e+]+ [^ ]+$/) {
          split(line, a, " "); t = a[1]; sub(/:$/, "", t)
          if (t == name) { v[++n] = a[2] + 0; unit[name] = a[3] }
        }
      }
      close(f)
    }
    if (n == 0) return ""
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
    return (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
  }
'
