#!/usr/bin/env bash
# One-shot check on a GPU machine: build, every test, compute-sanitizer on a
# small subset of the GPU tests, the benchmark, and a short summary printed last.
#
#   bash scripts/gpu_check.sh                    (from the repository root, e.g. on the device)
#
# Output (at most 8 files, no deeper than $OUT/bench/file, so the device tool
# returns them all):
#   $OUT/log.txt         build and benchmark console output
#   $OUT/pytest.log      pytest tests/ (all tests, GPU ones included)
#   $OUT/junit.xml       the same as JUnit XML
#   $OUT/sanitizer.log   compute-sanitizer memcheck and racecheck runs
#   $OUT/bench/results.{json,md}, $OUT/bench/speedup.png
#   $OUT/summary.txt     the summary printed at the end
#
# Environment (all optional):
#   OUT                     output folder (default: ./gpu_check_out)
#   GPU_CHECK_STEPS         comma list of build,test,memcheck,racecheck,bench (default: all of them)
#   GPU_CHECK_TEST_PATHS    what the test step runs (default: tests/)
#   GPU_CHECK_PYTEST_ARGS   extra pytest arguments for the test step, e.g. "-k 'not 2_31'"
#   GPU_CHECK_SHARDS        the test step as this many concurrent pytest processes (default 1;
#                           tests/conftest.py --shard K/N): tests/test_cuda.py took ~590 s in one
#                           process on an H100, 165-172 s in 4 (runs QC, QF). Their logs follow one
#                           another in pytest.log; junit.xml holds one testsuite per shard
#   GPU_CHECK_MEMCHECK_K, GPU_CHECK_RACECHECK_K   pytest -k expressions of the sanitizer runs
#                           (defaults "sanitizer_smoke" and "sanitizer_smoke and tiny")
#   CONVT_BENCH_CONFIGS     benchmark configs, dtype:layout:mode comma list (default below)
#   CONVT_BENCH_SHAPES      suite names or substrings, comma list (default: all shapes)
#   CONVT_BENCH_ARGS        extra benchmark arguments, e.g. "--rep 50" or "--impl pytorch"
#   TIMEOUT_TEST, TIMEOUT_SANITIZER, TIMEOUT_BENCH   seconds per step (defaults 300, 150, 300);
#                           a step cut off by its timeout still writes its logs (SIGINT first)
#   PYTHON                  interpreter (default: python3)
#   GPU_CHECK_KEEP_CXX=1    keep the environment's CXX/CC (default: unset them; see below)
set -u -o pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-$PWD/gpu_check_out}
mkdir -p "$OUT/bench"
export CONVT_OP_BUILD_DIR=${CONVT_OP_BUILD_DIR:-$PWD/.devbuild}
# The team's GPU machines set CXX/CC to a GCC wrapper whose shared objects crash on their
# first formatted error message (docs/gpu-test-results.md). convt_op's build detects that
# and falls back by itself, but AOTInductor (tests/test_compile_cuda.py) compiles with CXX
# too; with them unset, both use the system compiler.
if [[ ${GPU_CHECK_KEEP_CXX:-0} != 1 ]]; then unset CXX CC; fi
export PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
STEPS=",${GPU_CHECK_STEPS:-build,test,memcheck,racecheck,bench},"
CONFIGS=${CONVT_BENCH_CONFIGS:-float32:nchw:fwd,float32:channels_last:fwd,bfloat16:nchw:fwd,float32:nchw:fwdbwd,bfloat16:nchw:fwdbwd,float32:nchw:grad_input,float32:nchw:grad_weight}
LOG=$OUT/log.txt
SAN=$OUT/sanitizer.log
: >"$LOG"
: >"$SAN"
declare -A RESULT=()
ORDER=()

want() { [[ $STEPS == *",$1,"* ]]; }
record() { RESULT[$1]=$2; ORDER+=("$1"); }
# timeout with SIGINT first, so pytest and the benchmark write their reports before exiting.
limited() { local t=$1; shift; timeout -s INT -k 30 "$t" "$@"; }
status_of() {
  case $1 in
    0) echo ok ;;
    5) echo "ok (pytest collected no tests: CUDA kernels not built yet?)" ;;
    124) echo "TIMEOUT" ;;
    *) echo "FAILED (exit $1)" ;;
  esac
}

{
  echo "== gpu_check $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(hostname)"
  nvidia-smi -L 2>/dev/null || echo "nvidia-smi: not available"
  $PY -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), "gpus", torch.cuda.device_count())'
} 2>&1 | tee -a "$LOG"

if want build; then
  echo "== build" | tee -a "$LOG"
  start=$SECONDS
  $PY -m convt_op build 2>&1 | tee -a "$LOG"
  rc=$?
  record build "$(status_of $rc) in $((SECONDS - start))s"
  if [[ $rc != 0 ]]; then
    echo "gpu_check: build failed; skipping the other steps" | tee -a "$LOG"
    STEPS=","
  fi
fi

if want test; then
  echo "== pytest ${GPU_CHECK_TEST_PATHS:-tests/}" | tee -a "$LOG"
  start=$SECONDS
  shards=${GPU_CHECK_SHARDS:-1}
  if [[ $shards -le 1 ]]; then
    # shellcheck disable=SC2086  # GPU_CHECK_PYTEST_ARGS is a word list on purpose
    eval limited "${TIMEOUT_TEST:-300}" $PY -m pytest "${GPU_CHECK_TEST_PATHS:-tests/}" -q -rfEs --durations=15 -p no:cacheprovider \
      --junitxml="$OUT/junit.xml" "${GPU_CHECK_PYTEST_ARGS:-}" >"$OUT/pytest.log" 2>&1
    rc=$?
  else
    # The CPU references' threads split between the shards.
    threads=$(( $(nproc) / shards )); [[ $threads -ge 1 ]] || threads=1
    pids=()
    for ((k = 0; k < shards; k++)); do
      # shellcheck disable=SC2086
      OMP_NUM_THREADS=$threads eval limited "${TIMEOUT_TEST:-300}" $PY -m pytest "${GPU_CHECK_TEST_PATHS:-tests/}" -q -rfEs \
        --durations=5 -p no:cacheprovider --shard "$k/$shards" --junitxml="$OUT/junit_$k.xml" "${GPU_CHECK_PYTEST_ARGS:-}" \
        >"$OUT/pytest_$k.log" 2>&1 &
      pids+=($!)
    done
    # The step's status: the first shard's failure, else 0 (or 5 if every shard collected nothing).
    rc=
    for pid in "${pids[@]}"; do
      wait "$pid"; r=$?
      if [[ -z $rc || ($rc == 0 || $rc == 5) && $r != 5 ]]; then rc=$r; fi
    done
    : >"$OUT/pytest.log"
    for ((k = 0; k < shards; k++)); do
      echo "===== shard $k/$shards" >>"$OUT/pytest.log"
      cat "$OUT/pytest_$k.log" >>"$OUT/pytest.log"
      rm -f "$OUT/pytest_$k.log"
    done
    # One junit.xml (the device tool returns at most 8 files): the shards' suites under <testsuites>.
    $PY - "$OUT" "$shards" <<'EOF'
import os, sys, xml.etree.ElementTree as ET
out, n = sys.argv[1], int(sys.argv[2])
merged = ET.Element("testsuites")
for k in range(n):
    path = os.path.join(out, f"junit_{k}.xml")
    if os.path.exists(path):
        root = ET.parse(path).getroot()
        merged.extend([root] if root.tag == "testsuite" else list(root))
        os.remove(path)
ET.ElementTree(merged).write(os.path.join(out, "junit.xml"))
EOF
  fi
  tail -n 25 "$OUT/pytest.log"
  record test "$(status_of $rc) in $((SECONDS - start))s"
fi

# compute-sanitizer: PyTorch's caching allocator hands out pieces of larger
# cudaMalloc blocks, which would hide out-of-bounds accesses from memcheck;
# PYTORCH_NO_CUDA_MEMORY_CACHING=1 gives every tensor its own allocation. The
# smoke tests compute their references on the CPU so that only convt's kernels
# run under the tool.
sanitize() {  # tool, pytest -k expression
  local tool=$1 expr=$2 start=$SECONDS rc
  echo "== compute-sanitizer --tool $tool, tests: $expr" | tee -a "$SAN"
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 limited "${TIMEOUT_SANITIZER:-150}" \
    compute-sanitizer --tool "$tool" --error-exitcode 3 --print-limit 50 \
    $PY -m pytest tests/test_cuda.py -q -p no:cacheprovider -k "$expr" >>"$SAN" 2>&1
  rc=$?
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed|failed|skipped|error" "$SAN" | tail -n 3
  record "$tool" "$(status_of $rc) in $((SECONDS - start))s"
}
if want memcheck; then sanitize memcheck "${GPU_CHECK_MEMCHECK_K:-sanitizer_smoke}"; fi
if want racecheck; then sanitize racecheck "${GPU_CHECK_RACECHECK_K:-sanitizer_smoke and tiny}"; fi

if want bench; then
  echo "== bench ($CONFIGS)" | tee -a "$LOG"
  start=$SECONDS
  # shellcheck disable=SC2086
  limited "${TIMEOUT_BENCH:-300}" $PY -m convt_op bench --configs "$CONFIGS" \
    ${CONVT_BENCH_SHAPES:+--shapes "$CONVT_BENCH_SHAPES"} --out "$OUT/bench" ${CONVT_BENCH_ARGS:-} >>"$LOG" 2>&1
  rc=$?
  [[ $rc == 0 ]] || tail -n 4 "$LOG"
  record bench "$(status_of $rc) in $((SECONDS - start))s"
fi

# ---- summary (printed last, also saved)
{
  echo
  echo "================ gpu_check summary ================"
  for step in "${ORDER[@]}"; do printf '%-10s %s\n' "$step" "${RESULT[$step]}"; done
  if [[ -f $OUT/junit.xml ]]; then
    $PY - "$OUT/junit.xml" <<'EOF'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
suites = [root] if root.tag == "testsuite" else list(root)
get = lambda k: sum(int(s.get(k, 0)) for s in suites)
t, f, e, s = get("tests"), get("failures"), get("errors"), get("skipped")
print(f"pytest     {t} tests: {t - f - e - s} passed, {f} failed, {e} errors, {s} skipped")
bad = [f"{c.get('classname', '').split('.')[-1]}::{c.get('name')}" for s_ in suites for c in s_.iter("testcase")
       if c.find("failure") is not None or c.find("error") is not None]
for name in bad[:15]:
    print(f"  FAILED {name}")
if len(bad) > 15:
    print(f"  ... and {len(bad) - 15} more (pytest.log)")
EOF
  fi
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$SAN" 2>/dev/null | sed 's/^/sanitizer  /'
  if [[ -f $OUT/bench/results.json ]]; then
    $PY - "$OUT/bench/results.json" <<'EOF'
import json, sys
data = json.load(open(sys.argv[1]))
env, rows = data["environment"], data["rows"]
rates = ", ".join(f"{k} {v / 1e12:.0f}" for k, v in env["matmul_flops"].items())
print(f"bench      {env['device']}; ours = {env['impl']}; copy {env['copy_bandwidth_Bps'] / 1e12:.2f} TB/s; "
      f"matmul TFLOP/s {rates}")
print(f"{'shape':20s} {'config':26s} {'ours ms':>8s} {'torch ms':>8s} {'speedup':>7s} {'ours%fl':>7s} "
      f"{'torch%fl':>8s} {'rel err':>8s}  status")
fmt = lambda v, spec: "-" if v is None else format(v, spec)
for r in rows:
    tf = "" if r["tf32"] is None else ("/tf32" if r["tf32"] else "/strict")
    cfg = f"{r['dtype']}{tf} {'cl' if r['layout'] == 'channels_last' else r['layout']} {r['mode']}"
    print(f"{r['shape']:20s} {cfg:26s} {fmt(r.get('ours_ms'), '8.3f')} {fmt(r.get('pytorch_ms'), '8.3f')} "
          f"{fmt(r.get('speedup'), '7.2f')} {fmt(r.get('ours_pct_floor'), '7.0f')} "
          f"{fmt(r.get('pytorch_pct_floor'), '8.0f')} {fmt(r.get('rel_err'), '8.1e')}  {r['status'][:60]}")
EOF
  fi
} 2>&1 | tee "$OUT/summary.txt"

for step in "${ORDER[@]}"; do [[ ${RESULT[$step]} == ok* ]] || exit 1; done
exit 0
