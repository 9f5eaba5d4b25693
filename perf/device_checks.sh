#!/usr/bin/env bash
# Every GPU claim of issue 10, measured in one run on a machine with a CUDA device:
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
# Copy the JSON into perf/results/ to commit them; each names its device and commit.
set -uo pipefail
out=${1:?usage: bash perf/device_checks.sh OUTDIR}
mkdir -p "$out"
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$PWD:$PWD/tests"
py=${PYTHON:-python3}

$py -m engine.cli info > "$out/info.txt" 2>&1
$py -m pytest -m gpu tests --ignore=tests/spark -q -p no:cacheprovider > "$out/gpu-tests.log" 2>&1
echo "gpu tests: exit $?" >> "$out/info.txt"
for backend in cuda cpu; do
  $py -m perf.bench_propagate --backend "$backend" --sizes 1000,5000 \
      --batches 1e4,1e5,1e6,1e7 --variants auto,closure,edgewise --repeat 5 \
      --no-memory-pass --out "$out/propagate-$backend.json" > "$out/propagate-$backend.log" 2>&1
  $py -m perf.bench_closure --backend "$backend" --sizes 100,1000,2000 --repeat 5 \
      --out "$out/closure-$backend.json" > "$out/closure-$backend.log" 2>&1
done
tail -n 3 "$out"/*.log
