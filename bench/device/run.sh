#!/usr/bin/env bash
# One device call (a lent GPU machine, root, no network): capture the real GPU outputs our
# parsers read, the prove scripts' raw outputs (gpu_perf.py in quick mode with its sampler's
# fields captured alongside), run `gpuonboard check` and `gpuonboard prove` on the machine itself
# (connection: local), then bench/gpu_check.sh. Everything lands under $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-/tmp/gpuonboard-device-out}; mkdir -p "$OUT"
if [ -d .whl ] && ! python3 -c "import paramiko, invoke, pyrage" 2>/dev/null; then
  python3 -m pip install -q --no-index --find-links .whl --no-compile --no-cache-dir --target /tmp/site \
    fabric paramiko invoke jinja2 pyyaml rich pyrage || exit 1
  export PYTHONPATH=/tmp/site:$PWD/src
else
  export PYTHONPATH=$PWD/src
fi
export PYTHONUNBUFFERED=1
exec > >(tee "$OUT/run.log") 2>&1
C=$OUT/cap; mkdir -p "$C"
cap() { local name=$1; shift; { "$@"; echo "rc=$?" >"$C/$name.rc"; } >"$C/$name" 2>"$C/$name.err"; }
cap nvidia-smi.txt nvidia-smi
cap nvidia-smi-q-x.xml nvidia-smi -q -x
cap nvidia-smi-q.txt nvidia-smi -q
cap nvidia-smi-topo-m.txt nvidia-smi topo -m
cap nvidia-smi-nvlink-s.txt nvidia-smi nvlink -s
cap nvidia-smi-query.csv nvidia-smi --query-gpu=index,name,memory.total,driver_version,pci.bus_id,ecc.mode.current,clocks_throttle_reasons.active --format=csv
cap lscpu.txt lscpu
cap lscpu-J.json lscpu -J
cap free-b.txt free -b
cap df.txt df -P -B1
cap lsblk.json lsblk -J -b -o NAME,SIZE,TYPE,MOUNTPOINT,ROTA,MODEL
cap os-release.txt cat /etc/os-release
cap uname-r.txt uname -r
cap nproc.txt nproc
cap free-h.txt free -h
cap free-k.txt free -k
cap df-h.txt df -h
cap nvidia-smi-q-d-ecc.txt nvidia-smi -q -d ECC
cap nvidia-smi-q-d-power.txt nvidia-smi -q -d POWER
cap dmesg.txt dmesg
cap nvcc.txt nvcc --version
cap dcgmi.txt dcgmi --version
cap torch.txt python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version(), torch.cuda.get_device_name(0))'
R=src/gpuonboard/remote
echo "== raw script outputs (fixtures for the prove rules)"
if [ -z "${SKIP_CAPTURED:-}" ]; then  # SKIP_CAPTURED=1: these three are already fixtures
python3 $R/smoke_train.py --device cuda >"$C/smoke_cuda.out" 2>"$C/smoke_cuda.err"; echo "smoke rc=$?"
python3 $R/allreduce.py --max-bytes 1073741824 >"$C/allreduce_nccl.out" 2>"$C/allreduce_nccl.err"; echo "allreduce rc=$?"
FIELDS=$(python3 -c "import sys; sys.path.insert(0, '$R'); import gpu_benchmark as g; print(','.join(g.SAMPLE_FIELDS))")
nvidia-smi --query-gpu="$FIELDS" --format=csv,noheader,nounits -lms=500 >"$C/sampler.csv" 2>/dev/null & SP=$!
python3 $R/gpu_benchmark.py --device cuda --duration 20 >"$C/gpu_benchmark_cuda.out" 2>"$C/gpu_benchmark_cuda.err"; echo "benchmark rc=$?"
kill "$SP"; wait "$SP" 2>/dev/null
fi
PFIELDS=$(python3 -c "import sys; sys.path.insert(0, '$R'); import gpu_perf as g; print(','.join(g.SAMPLE_FIELDS))")
cap nvidia-smi-perf-query.csv nvidia-smi --query-gpu="$PFIELDS" --format=csv,noheader,nounits
nvidia-smi --query-gpu="$PFIELDS" --format=csv,noheader,nounits -lms=500 >"$C/gpu_perf_sampler.csv" 2>/dev/null & SP=$!
python3 $R/gpu_perf.py --mode quick >"$C/gpu_perf_quick.out" 2>"$C/gpu_perf_quick.err"; echo "gpu_perf rc=$?"
kill "$SP"; wait "$SP" 2>/dev/null
(cd "$OUT" && tar czf captures.tgz cap && rm -rf cap)
gob() { python3 -c 'import sys; from gpuonboard.cli import main; sys.argv[0]="gpuonboard"; main()' "$@"; }
echo "== gpuonboard check"; gob check --host h200-local --inventory bench/device/hosts.yml --reports-dir "$OUT/reports" --state-dir /tmp/gob-state; echo "check rc=$?"
echo "== gpuonboard prove"; gob prove --host h200-local --inventory bench/device/hosts.yml --reports-dir "$OUT/reports" --state-dir /tmp/gob-state; echo "prove rc=$?"
if [ -n "${GPU_CHECK:-}" ]; then echo "== gpu_check.sh"; DURATION=${DURATION:-20} MAX=${MAX:-268435456} PY=python3 bash bench/gpu_check.sh 2>&1 | tee "$OUT/gpu_check.log"; fi
tar czf "$OUT/reports.tgz" -C "$OUT" reports; tar czf "$OUT/logs.tgz" .gpuonboard/logs; rm -rf "$OUT/reports"
