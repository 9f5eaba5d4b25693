#!/usr/bin/env bash
# Every GPU claim of issues 10 and 12, measured in one run on a machine with a CUDA device:
#   bash perf/device_checks.sh OUTDIR
# from the repository root, with CuPy and numba-cuda importable (the [cuda] or [cuda13]
# extra, or a GPU image that has them) and the repository on PYTHONPATH. Writes under OUTDIR:
#   info.txt            tfront info: the device, versions, compatibility aliases
#   gpu-tests.log       pytest -m gpu (every kernel against its CPU twin, the backend against
#                       the reference, the launch/sync counts, the auto choices)
#   propagate-cuda.json / propagate-cpu.json
#                       perf.bench_propagate, churn batches, cuda and cpu backends on the
#                       same host, N = 1000 and 5000, B = 1e4 .. 1e7, median of 5
#   closure-cuda.json / closure-cpu.json
#                       perf.bench_closure: Psi built on the device and on the host
#   rollback-cuda.json / rollback-full-cuda.json
#                       perf.bench_rollback --backend cpu,cuda: the batched rollback solver on
#                       the host and on the device side by side (simple guard up to 1e7 cells,
#                       full guard up to 1e5), with the launches and syncs per round
# Copy the JSON into perf/results/ to commit them; each names its device and commit.
set -uo pipefail
out=${1:?usage: bash perf/device_checks.sh OUTDIR}
mkdir -p "$out"
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$PWD:$PWD/tests"
py=${PYTHON:-python3}

$py -m engine.cli.main info > "$out/info.txt" 2>&1
$py -m pytest -m gpu tests --ignore=tests/spark -q -p no:cacheprovider > "$out/gpu-tests.log" 2>&1
echo "gpu tests: exit $?" >> "$out/info.txt"
for backend in cuda cpu; do
  $py -m perf.bench_propagate --backend "$backend" --sizes 1000,5000 \
      --batches 1e4,1e5,1e6,1e7 --variants auto,closure,edgewise --repeat 5 \
      --no-memory-pass --out "$out/propagate-$backend.json" > "$out/propagate-$backend.log" 2>&1
  $py -m perf.bench_closure --backend "$backend" --sizes 100,1000,2000 --repeat 5 \
      --out "$out/closure-$backend.json" > "$out/closure-$backend.log" 2>&1
done
$py -m perf.bench_rollback --backend cpu,cuda --guards simple --procs 100,1000,10000 \
    --times 1e2,1e3,1e4 --max-cells 1e7 --reference-limit 1 --repeat 3 \
    --out "$out/rollback-cuda.json" > "$out/rollback-cuda.log" 2>&1
$py -m perf.bench_rollback --backend cpu,cuda --guards full --procs 10,100,1000 \
    --times 1e2,1e3 --max-cells 1e6 --reference-limit-full 1 --repeat 1 \
    --out "$out/rollback-full-cuda.json" > "$out/rollback-full-cuda.log" 2>&1
tail -n 3 "$out"/*.log
