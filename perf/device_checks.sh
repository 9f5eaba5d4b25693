#!/usr/bin/env bash
# The device check of issue 24, sized for a loan of a few minutes: every step under its own
# timeout, all of them together under 8 minutes, on a machine with only CuPy, numba-cuda,
# NumPy, pyarrow, pytest and scipy (no PySpark, no Java, no package index needed):
#
#   bash perf/device_checks.sh OUTDIR
#
# from the repository root. Writes under OUTDIR one log per step, steps.tsv (step, exit
# status -- 124 when its timeout cut it -- and seconds), one JSON per measuring step, and at
# the end prints the target table (measured here next to the calibrated prediction of
# perf/calibration/gpu_model.py, with the targets) and writes it as OUTDIR/targets.json.
#
# Steps in order and their limits (seconds): info 20, launch 20, profile 45, psi 50,
# propagate 95, uf 20, rollback 30, jobs 100, gpu-tests 60, table 10 -- 450 s, and 2 s of
# grace each after a TERM: 470 s. The jobs step runs before the GPU tests so that its kernels,
# compiled once for the device, are in Numba's cache when the tests load them (a fresh
# machine spent 89 s compiling them in the first job and 100 s did not cover the tests).
#
# TFRONT_DEVICE_CHECK_SIMULATED=1 runs the same steps on Numba's CUDA simulator with tiny
# sizes (tests/perf/test_device_checks.py does): the script's logic, not the device's speed.
# TFRONT_DEVICE_CHECK_SCALE=F multiplies every limit by F (tests shrink or stretch them).
# TFRONT_DEVICE_CHECK_STEPS="info launch ..." runs only the steps named (the table always):
# for a loan with less time left than the whole script needs.
#
# At most 8 files come back from the device tool's $OUT: write into a local folder and pack it,
#   bash perf/device_checks.sh /tmp/dc; tar czf "$OUT/dc.tgz" -C /tmp dc
set -uo pipefail
out=${1:?usage: bash perf/device_checks.sh OUTDIR}
mkdir -p "$out"
export PYTHONPATH="$PWD:$PWD/tests${PYTHONPATH:+:$PYTHONPATH}"
py=${PYTHON:-python3}
scale=${TFRONT_DEVICE_CHECK_SCALE:-1}
sim=()
if [ "${TFRONT_DEVICE_CHECK_SIMULATED:-0}" = 1 ]; then
  export NUMBA_ENABLE_CUDASIM=1
  sim=(--simulated)
fi
: > "$out/steps.tsv"

step() {  # step NAME LIMIT_SECONDS COMMAND...
  local name=$1 limit=$2 t0=$SECONDS rc
  shift 2
  if [ -n "${TFRONT_DEVICE_CHECK_STEPS:-}" ] && [ "$name" != table ] \
      && [[ " $TFRONT_DEVICE_CHECK_STEPS " != *" $name "* ]]; then
    return 0
  fi
  limit=$(awk -v l="$limit" -v s="$scale" 'BEGIN { v = int(l * s + 0.5); print (v < 1 ? 1 : v) }')
  timeout -k 2 "$limit" "$@" > "$out/$name.log" 2>&1
  rc=$?
  printf '%s\t%d\t%d\n' "$name" "$rc" "$((SECONDS - t0))" >> "$out/steps.tsv"
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    echo "step $name: cut at its limit of ${limit}s (log: $out/$name.log)"
  else
    echo "step $name: exit $rc in $((SECONDS - t0))s"
  fi
}

step info 20 "$py" -m engine.cli.main info
step launch 20 "$py" -m perf.device_check launch "${sim[@]}" --out "$out/launch.json"
step profile 45 "$py" -m perf.device_check profile "${sim[@]}" --out "$out/profile.json"
step psi 50 "$py" -m perf.device_check psi "${sim[@]}" --out "$out/psi.json"
step propagate 95 "$py" -m perf.device_check propagate "${sim[@]}" --out "$out/propagate.json"
step uf 20 "$py" -m perf.device_check uf "${sim[@]}" --out "$out/uf.json"
step rollback 30 "$py" -m perf.device_check rollback "${sim[@]}" --out "$out/rollback.json"
step jobs 100 "$py" -m perf.device_check jobs "${sim[@]}" --out "$out/jobs.json"
if [ ${#sim[@]} -eq 0 ]; then
  step gpu-tests 60 "$py" -m pytest -m gpu -q -p no:cacheprovider \
      tests/engine/batched/test_cuda_gpu.py tests/gpu_kernels/test_unionfind.py
else  # the simulated kernels are the normal suite's business (tests/test_cuda_sim.py)
  step gpu-tests 60 "$py" -c "print('gpu tests: not on the simulator')"
fi
step table 10 "$py" -m perf.device_check table --dir "$out" --out "$out/targets.json"
cat "$out/table.log"
