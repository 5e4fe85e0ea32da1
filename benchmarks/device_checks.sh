#!/usr/bin/env bash
# Issue 26's checks on a lent GPU machine (NVIDIA H100/H200, 16 cores), in one command of at
# most LIMIT seconds (default 540): the GPU simulation against the CPU kernel
# (gpu_simulation.py), then the scaling rows (core_scaling.py: the nine-set one call on 2 and 16
# threads and a LocalCluster of 8 x 2, the default validate of 2e6 points on the CPU and the GPU,
# then on 2 threads if time is left). Results and logs go to $OUT. STAGES="validate_threads"
# runs instead the default validate of 2e6 points on 2 and on 16 threads, BLAS on one thread;
# "fma" the FMA check alone; "split" the split simulation kernel (gpu_split.py) and the
# validate of 2e6 points without cc on 16 threads and on the GPU; "profile" where the GPU
# validate of 2e6 points spends its time, without and with cc, and the CPU without cc; "exact"
# the GPU kernels with their sums in the CPU's order against the tree (gpu_bootstrap.py, then
# gpu_split.py: identical replicates, and what the ordered additions cost); "ranks" cc of
# simulated sets on the GPU (gpu_ranks.py: identical replicates at 1e5 and 3e5 points, 500 sets
# of 2e6 with and without cc), then the default validate of 2e6 points (with cc) on 16 threads
# and on the GPU.
#
# Prepared here, before the call (see the device tool's README):
#   .whl/      wheels of what the machine's Python 3.12 lacks (dask, distributed, numbagg,
#              cftime, tblib, importlib_metadata, lazy_importer, tornado, zict, locket, partd)
#   .devdata/  a copy of ../shared/data (the nine shared sets)
# both ignored through .git/info/exclude and named in the call's carry.
set -uo pipefail
LIMIT=${LIMIT:-540}
OUT=${OUT:-/tmp/device-out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
mkdir -p /tmp/sitecustom
cat > /tmp/sitecustom/sitecustomize.py <<'EOF'
import numpy as np

if not hasattr(np, "row_stack"):  # numba-cuda 0.30 calls it; NumPy 2.5 has removed it
    np.row_stack = np.vstack
EOF
export PYTHONPATH="$PWD:/tmp/site:/tmp/sitecustom" XUQCAL_SHARED_DATA="$PWD/.devdata"
export PYTHONUNBUFFERED=1
nvidia-smi -L
python3 -c "import numpy, scipy, numba, xarray, dask, distributed, numba.cuda as c; \
print('numpy', numpy.__version__, 'scipy', scipy.__version__, 'numba', numba.__version__, \
'xarray', xarray.__version__, 'dask', dask.__version__, 'gpu', c.is_available())"

# the default validate of 2e6 points on 16 threads and on the GPU (core_scaling.py) in the time
# left: validate_on_16_threads_and_the_gpu NAME VALIDATE (VALIDATE: default or without_cc)
validate_on_16_threads_and_the_gpu() {
    local left=$((LIMIT - SECONDS - 20))
    echo "== validate ($2) at ${SECONDS} s, budget ${left} s"
    timeout $((left + 10)) python3 benchmarks/core_scaling.py --out "$OUT/$1.json" \
        --work validate --threads 16 --cuda --validate "$2" --budget "$left" \
        > "$OUT/$1.log" 2>&1
    echo "core_scaling.py exit $?"; tail -n 20 "$OUT/$1.log"
}

STAGES=${STAGES:-"gpu_simulation core_scaling"}
if [[ " $STAGES " == *" fma "* ]]; then
    timeout 120 python3 benchmarks/gpu_simulation.py --fma-only --out "$OUT/fma.json" \
        > "$OUT/fma.log" 2>&1
    echo "fma check exit $?"; grep "FMA" "$OUT/fma.log"
fi
if [[ " $STAGES " == *" split "* ]]; then
    # the split simulation kernel against one thread per replicate, then the validate of 2e6
    # points without cc (what the GPU simulates) on 16 threads and on the GPU
    timeout 200 python3 benchmarks/gpu_split.py --out "$OUT/gpu-split.json" --budget 150 \
        > "$OUT/gpu-split.log" 2>&1
    echo "gpu_split.py exit $?"; tail -n 30 "$OUT/gpu-split.log"
    validate_on_16_threads_and_the_gpu validate-cuda without_cc
fi
if [[ " $STAGES " == *" exact "* ]]; then
    # the sums in the CPU's order (the default since 2026-11-27, third session) against the
    # tree: the bootstrap (identical replicates at M = 2e5; kernel times at 2e6, B = 1e4), then
    # the split simulation (identical statistics; 500 and 1e4 sets of 2e6 points)
    timeout 240 python3 benchmarks/gpu_bootstrap.py --out "$OUT/gpu-bootstrap.json" \
        > "$OUT/gpu-bootstrap.log" 2>&1
    echo "gpu_bootstrap.py exit $?"; tail -n 12 "$OUT/gpu-bootstrap.log"
    timeout $((LIMIT - SECONDS - 10)) python3 benchmarks/gpu_split.py \
        --out "$OUT/gpu-split.json" --budget $((LIMIT - SECONDS - 60)) \
        > "$OUT/gpu-split.log" 2>&1
    echo "gpu_split.py exit $?"; tail -n 30 "$OUT/gpu-split.log"
fi
if [[ " $STAGES " == *" ranks "* ]]; then
    timeout 240 python3 benchmarks/gpu_ranks.py --out "$OUT/gpu-ranks.json" \
        > "$OUT/gpu-ranks.log" 2>&1
    echo "gpu_ranks.py exit $?"; tail -n 12 "$OUT/gpu-ranks.log"
    validate_on_16_threads_and_the_gpu validate-cc-cuda default
fi
if [[ " $STAGES " == *" profile "* ]]; then
    # where the default validate of 2e6 points spends its wall time on the GPU, without and
    # with cc, and on the CPU without cc (cProfile of the calling thread)
    for run in "cuda --without-cc" "cuda" "cpu --without-cc"; do
        name=$(echo "$run" | tr -d '-' | tr ' ' '-')
        echo "== profile_validate.py --device ${run} at ${SECONDS} s"
        timeout $((LIMIT - SECONDS - 10)) python3 benchmarks/profile_validate.py --device $run \
            --out "$OUT/profile-${name}.json" > "$OUT/profile-${name}.log" 2>&1
        echo "exit $?"; grep -v Warning "$OUT/profile-${name}.log" | grep -v "warn(" | head -n 30
    done
fi
if [[ " $STAGES " == *" validate_threads "* ]]; then
    # the default validate of 2e6 points on 2 threads, then on 16, in two processes, with
    # BLAS and OpenMP held to one thread (does their spinning add CPU time?)
    for threads in 2 16; do
        echo "== validate on ${threads} threads at ${SECONDS} s"
        OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \
            timeout $((LIMIT - SECONDS - 10)) python3 benchmarks/core_scaling.py \
            --out "$OUT/validate-${threads}-threads.json" --work validate --threads "$threads" \
            --budget 1000 > "$OUT/validate-${threads}-threads.log" 2>&1
        echo "exit $?"; tail -n 3 "$OUT/validate-${threads}-threads.log"
    done
fi
[[ " $STAGES " == *" gpu_simulation "* ]] || { echo "== done at ${SECONDS} s"; exit 0; }
echo "== gpu_simulation.py at ${SECONDS} s"
timeout 200 python3 benchmarks/gpu_simulation.py --out "$OUT/gpu-simulation.json" \
    > "$OUT/gpu-simulation.log" 2>&1
echo "gpu_simulation.py exit $?"; tail -n 25 "$OUT/gpu-simulation.log"

left=$((LIMIT - SECONDS - 25))
echo "== core_scaling.py at ${SECONDS} s, budget ${left} s"
timeout $((left + 15)) python3 benchmarks/core_scaling.py --out "$OUT/core-scaling.json" \
    --threads 2,16 --cuda --cluster 8,2 --budget "$left" > "$OUT/core-scaling.log" 2>&1
echo "core_scaling.py exit $?"; tail -n 40 "$OUT/core-scaling.log"
echo "== done at ${SECONDS} s"
