#!/usr/bin/env bash
# GPU paths of issue 7 on a machine WITH NVIDIA GPUs (not run in CI: no GPU there).
# Runs nvidia-smi, the bundled smoke training on CUDA, the all-reduce benchmark over NCCL and
# the ResNet-50 benchmark (images/s per GPU, DURATION=30 s sustained load by default)
# with the Python that has a CUDA torch, and prints the figures. Usage:
#   PY=python3 bash bench/gpu_check.sh            # MAX=1073741824 for the full 1 GiB sweep
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-python3}
MAX=${MAX:-1073741824}
echo "== nvidia-smi"; nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv || exit 1
nvidia-smi topo -m || true
echo "== torch"; "$PY" -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count())' || exit 1
echo "== smoke_train (cuda)"
"$PY" src/gpuonboard/remote/smoke_train.py --device cuda --steps 200 --batch-size 256 --workers 4 \
  | sed -n 's/^GPUONBOARD_RESULT //p' | "$PY" -c '
import json, sys
r = json.load(sys.stdin)
r.pop("losses", None)
print(json.dumps(r, indent=1))
assert r["ok"] and r["device"] == "cuda" and r["checkpoint"]["identical"] and r["loss_last"] < 0.8 * r["loss_first"]
print("SMOKE OK")' || echo "SMOKE FAILED"
echo "== allreduce (nccl, all GPUs, up to $MAX bytes)"
read -r -d '' TABLE <<'PYEOF'
import json, sys
r = json.load(sys.stdin)
if not r.get("ok"):
    print("ALLREDUCE FAILED", r)
    sys.exit(1)
print(f"{r['world_size']} x {r['backend']} on {r['device_name']} (NCCL {r['nccl_version']})")
print(f"{'bytes':>12} {'time_us':>10} {'algbw':>8} {'busbw':>8}")
for x in r["rows"]:
    flag = "" if x["correct"] else "WRONG"
    print(f"{x['bytes']:>12} {x['time_us']:>10.1f} {x['algbw_gbps']:>8.2f} {x['busbw_gbps']:>8.2f} {flag}")
print(f"peak busbw {r['peak_busbw_gbps']:.1f} GB/s; all correct: {r['all_correct']}")
PYEOF
"$PY" src/gpuonboard/remote/allreduce.py --max-bytes "$MAX" | sed -n 's/^GPUONBOARD_RESULT //p' | "$PY" -c "$TABLE"
echo "== gpu_benchmark (ResNet-50, AMP, every GPU, sustained ${DURATION:=30} s)"
read -r -d '' BENCH <<'PYEOF'
import json, sys
r = json.load(sys.stdin)
if not r.get("ok"):
    print("GPU_BENCHMARK FAILED", r)
    sys.exit(1)
print(f"{r['device']} {r['precision']} torch {r['torch_version']}, sampler {r['sampler']}")
for w in r["workers"]:
    s = w.get("sustained") or {}
    print(f"GPU {w['gpu']} {w['device_name']}: {w['images_per_s']:.0f} images/s (batch {w['batch_size']},"
          f" peak {(w['peak_mem_bytes'] or 0) / 2**30:.1f} GiB); sustained {s.get('first_images_per_s', 0):.0f}"
          f" -> {s.get('last_images_per_s', 0):.0f} images/s")
for idx, s in (r.get("samples") or {}).items():
    print(f"GPU {idx} under load: {json.dumps(s)}")
for e in r.get("worker_errors") or []:
    print("WORKER ERROR", e)
PYEOF
"$PY" src/gpuonboard/remote/gpu_benchmark.py --device cuda --duration "$DURATION" \
  | sed -n 's/^GPUONBOARD_RESULT //p' | "$PY" -c "$BENCH"
