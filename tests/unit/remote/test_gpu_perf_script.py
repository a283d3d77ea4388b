"""gpu_perf.py (the `gpu_perf` prove workload) run for real on the CPU in a subprocess at small sizes:
its PLAN line comes first, its RESULT line has the issue-29 contract's shape (no NaN, figures above
0), a bad argument is one line and a non-zero exit, and a worker that fails or hangs is reported
while the rest still is. Its nvidia-smi parsers (pure functions in the script, loaded from the
file) are run on real captures: `nvidia-smi topo -m` (tests/fixtures/real/SOURCES.md) and the
query-gpu sampler."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

SCRIPT = Path(__file__).parents[3] / "src" / "gpuonboard" / "remote" / "gpu_perf.py"
REAL = Path(__file__).parents[2] / "fixtures" / "real"
SMALL = ["--size-scale", "0.02", "--seconds", "0.15", "--sustain", "0"]
needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch not installed")


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_perf_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gp = _script()


def _run(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def _no_nan(text: str) -> Any:
    def reject(name: str) -> Any:
        raise AssertionError(f"{name} in the result")

    return json.loads(text, parse_constant=reject)


def _lines(out: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(plan, result): the PLAN line must be the first line of stdout, the RESULT line the last."""
    lines = [x for x in out.splitlines() if x.strip()]
    assert lines[0].startswith("GPUONBOARD_PLAN "), lines[0]
    assert lines[-1].startswith("GPUONBOARD_RESULT "), lines[-1]
    assert sum(x.startswith("GPUONBOARD_RESULT ") for x in lines) == 1
    return _no_nan(lines[0].split(" ", 1)[1]), _no_nan(lines[-1].split(" ", 1)[1])


GPU_KEYS = {"index", "name", "capability", "matmul_tflops", "skipped", "membw_gbps", "h2d_gbps", "d2h_gbps"}
GPU_KEYS |= {"pcie", "error"}
TOP_KEYS = {"schema", "device", "mode", "torch", "cuda", "cuda_device_count", "elapsed_s", "gpus", "p2p"}
TOP_KEYS |= {"sustained", "sampler", "worker_errors"}


def _check_shape(r: dict[str, Any]) -> None:
    assert set(r) >= TOP_KEYS, TOP_KEYS - set(r)
    assert r["ok"] is True  # (the result line every shipped script gives)
    assert r["schema"] == 1 and r["device"] in ("cuda", "cpu") and r["mode"] in ("quick", "full")
    assert isinstance(r["torch"], str) and (r["cuda"] is None or isinstance(r["cuda"], str))
    assert isinstance(r["cuda_device_count"], int) and isinstance(r["elapsed_s"], float)
    assert isinstance(r["worker_errors"], list) and all(isinstance(e, str) for e in r["worker_errors"])
    assert r["sampler"] in (None, "nvidia-smi")
    for i, g in enumerate(r["gpus"]):
        assert set(g) >= GPU_KEYS, GPU_KEYS - set(g)
        assert g["index"] == i and (g["error"] is None or isinstance(g["error"], str))
        assert set(g["matmul_tflops"]) <= set(gp.DTYPES) and set(g["skipped"]) <= set(gp.DTYPES)
        assert not set(g["matmul_tflops"]) & set(g["skipped"])  # measured, or skipped with a reason
        assert all(isinstance(v, str) and v for v in g["skipped"].values())
        assert set(g["membw_gbps"]) <= {"copy", "triad"}
        for v in [*g["matmul_tflops"].values(), *g["membw_gbps"].values()]:
            assert isinstance(v, float) and math.isfinite(v)
        for key in ("h2d_gbps", "d2h_gbps"):
            assert g[key] is None or isinstance(g[key], float)


@needs_torch
def test_cpu_run_has_the_contract_shape() -> None:
    t0 = time.monotonic()
    done = _run("--mode", "quick", *SMALL)
    assert done.returncode == 0, done.stderr[-2000:]
    plan, r = _lines(done.stdout)
    assert plan["gpus"] == 1 and isinstance(plan["estimate_s"], float) and plan["estimate_s"] > 0
    _check_shape(r)
    assert r["device"] == "cpu" and r["cuda_device_count"] == 0 and r["mode"] == "quick"
    assert r["p2p"] is None and r["sustained"] is None and r["sampler"] is None and r["worker_errors"] == []
    [g] = r["gpus"]
    assert g["index"] == 0 and g["name"] == "cpu" and g["error"] is None and g["capability"] is None
    assert set(g["matmul_tflops"]) == {"fp32", "bf16"}
    assert set(g["skipped"]) == {"tf32", "fp16", "fp8"}
    assert set(g["membw_gbps"]) == {"copy", "triad"}
    assert all(v > 0 for v in [*g["matmul_tflops"].values(), *g["membw_gbps"].values()])
    assert g["h2d_gbps"] is None and g["d2h_gbps"] is None and g["pcie"] is None
    # CUDA device i is nvidia-smi's GPU i only in PCI bus order (CUDA's default is fastest first)
    assert r["cuda_device_order"] == "PCI_BUS_ID" and g["pci_bus_id"] is None
    assert 0 < r["elapsed_s"] < time.monotonic() - t0


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["--mode", "fast"], "--mode"),
        (["--seconds", "0"], "--seconds"),
        (["--sustain", "-1"], "--sustain"),
        (["--size-scale", "nan"], "--size-scale"),
        (["--frobnicate"], "--frobnicate"),
    ],
)
def test_a_bad_argument_is_one_line_and_a_non_zero_exit(args: list[str], names: str) -> None:
    done = _run(*args, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and names in done.stderr, done.stderr


@needs_torch
def test_a_failing_and_a_hanging_worker_are_reported_and_the_rest_still_is() -> None:
    """The worker machinery (READY, go, deadline, kill) on CPU workers: GPU 1 hangs past the
    deadline, GPU 2 raises; GPU 0 is measured and the run ends soon after the deadline."""
    t0 = time.monotonic()
    done = _run(*SMALL, "--cpu-workers", "3", "--inject", "hang@1,fail@2", "--deadline-s", "8")
    assert done.returncode == 0, done.stderr[-2000:]
    plan, r = _lines(done.stdout)
    assert plan["gpus"] == 3
    _check_shape(r)
    ok, hung, failed = r["gpus"]
    assert ok["error"] is None and ok["matmul_tflops"]["fp32"] > 0 and ok["membw_gbps"]["copy"] > 0
    assert "no result within the deadline" in hung["error"] and "killed" in hung["error"]
    assert failed["error"] == "RuntimeError: injected failure"
    assert r["worker_errors"] == [
        "GPU 1 (perf): " + hung["error"],
        "GPU 2 (perf): RuntimeError: injected failure",
    ]
    assert time.monotonic() - t0 < 120


# --------------------------------------------------------------------------- GPU side, faked


class FakeWorker:
    """A worker that answers at once with what `SCRIPTED` holds for its label (no process)."""

    SCRIPTED: dict[str, tuple[list[dict[str, Any]], str | None]] = {}

    def __init__(self, label: str, argv: list[str], tmp: str) -> None:
        self.info = {"name": "NVIDIA H200", "capability": "9.0"}
        self.results, self.error = self.SCRIPTED[label]
        self.ready = threading.Event()
        self.ready.set()

    def go(self) -> None:
        pass

    def finish(self, until: float) -> str | None:
        return self.error

    def kill(self) -> None:
        pass


def test_a_two_gpu_result_is_put_together_as_the_contract_says(monkeypatch: pytest.MonkeyPatch) -> None:
    """The parent's side of a CUDA run (phases, P2P matrix, sustained summary, errors) with the
    workers' lines scripted: GPU 1's host copies fail, the 1->0 copy returns other data, GPU 1's
    sustained worker is killed at its deadline."""
    perf = {"matmul_tflops": {"bf16": 700.0}, "skipped": {"fp8": "x"}, "membw_gbps": {"copy": 4000.0}}
    window = {"dtype": "bf16", "start": 0.0, "end": 1.0, "windows_tflops": [705.0, *[680.0] * 8, 640.0]}
    FakeWorker.SCRIPTED = {
        "gpu0 perf": ([{"name": "NVIDIA H200", "capability": "9.0", **perf}], None),
        "gpu1 perf": ([{"name": "NVIDIA H200", "capability": "9.0", **perf}], None),
        "links": (
            [
                {"kind": "host", "index": 0, "h2d_gbps": 51.0, "d2h_gbps": 52.0},
                {"kind": "host", "index": 1, "error": "RuntimeError: CUDA error"},
                {"kind": "access", "access": [[True, False], [False, True]]},
                {"kind": "p2p", "src": 0, "dst": 1, "gbps": 40.5},
                {"kind": "p2p", "src": 1, "dst": 0, "error": "the copy returned other data than was sent"},
            ],
            None,
        ),
        "gpu0 sustain": ([window], None),
        "gpu1 sustain": ([], "no result within the deadline (0 result line(s); killed)"),
    }
    monkeypatch.setattr(gp, "Worker", FakeWorker)
    monkeypatch.setattr(gp.signal, "signal", lambda *a: None)
    monkeypatch.setattr(gp.shutil, "which", lambda name: None)  # no nvidia-smi: no sampler, no topology
    args = gp.parse_args(["--mode", "quick"])
    torch = SimpleNamespace(__version__="2.4.0", version=SimpleNamespace(cuda="12.4"))
    torch.cuda = SimpleNamespace(device_count=lambda: 2)
    r = gp.new_result(args, torch, True, 2)
    gp.cuda_run(args, r, 2)
    r["elapsed_s"] = 1.0
    r = _no_nan(json.dumps(r))
    _check_shape(r)
    assert r["device"] == "cuda" and r["cuda"] == "12.4" and r["cuda_device_count"] == 2
    g0, g1 = r["gpus"]
    assert g0["name"] == "NVIDIA H200" and g0["matmul_tflops"] == {"bf16": 700.0} and g0["h2d_gbps"] == 51.0
    assert g0["error"] is None and g0["pcie"] is None
    assert g1["h2d_gbps"] is None and g1["error"].startswith("RuntimeError: CUDA error; sustain: no result")
    assert r["p2p"] == {
        "access": [[True, False], [False, True]],
        "gbps": [[None, 40.5], [None, None]],
        "topology": None,
    }
    assert r["sampler"] is None
    assert r["sustained"]["seconds"] == 45.0 and set(r["sustained"]["per_gpu"]) == {"0"}
    s0 = r["sustained"]["per_gpu"]["0"]
    assert (s0["tflops_first"], s0["tflops_last"], s0["samples"], s0["sm_clock_first_mhz"]) == (
        705.0,
        640.0,
        0,
        None,
    )
    assert r["worker_errors"] == [
        "GPU 1 (host copies): RuntimeError: CUDA error",
        "P2P 1->0: the copy returned other data than was sent",
        "GPU 1 (sustain): no result within the deadline (0 result line(s); killed)",
    ]


# --------------------------------------------------------------------------- topology


def _mesh(gpus: int, link: str) -> dict[str, str]:
    return {f"{i}-{j}": link for i in range(gpus) for j in range(i + 1, gpus)}


TOPOLOGIES: dict[str, dict[str, str] | None] = {
    "nvidia-smi-topo-m__a100__8gpu-12nic__dgx-a100.txt": _mesh(8, "NV12"),
    "nvidia-smi-topo-m__h200__8gpu-10nic.txt": _mesh(8, "NV18"),
    "nvidia-smi-topo-m__a800-sxm4__8gpu-nv8-8nic-bond__zh-env-report.txt": _mesh(8, "NV8"),
    "nvidia-smi-topo-m__b300-hgx__7-of-8-gpus__legend__dell-xe9780.txt": _mesh(7, "NV18"),
    "nvidia-smi-topo-m__8x-h100-nv18__space-aligned__nccl-note.txt": _mesh(8, "NV18"),
    "nvidia-smi-topo-m__h100-80gb-hbm3__4gpu-8nic__driver560.35.05__space-aligned.txt": _mesh(4, "NV18"),
    "nvidia-smi-topo-m__kepler__4gpu-soc-phb__path-traverses-legend__ompi-users-2015.txt": {
        "0-1": "PHB", "0-2": "SOC", "0-3": "SOC", "1-2": "SOC", "1-3": "SOC", "2-3": "PHB",
    },
    "nvidia-smi-topo-m__rtx-6000-ada__4gpu-4nic__driver575.51.03__space-aligned.txt": {
        "0-1": "NODE", "0-2": "SYS", "0-3": "SYS", "1-2": "SYS", "1-3": "SYS", "2-3": "NODE",
    },
    "nvidia-smi-topo-m__v100-sxm2-32gb__4gpu-4nic__power9-traverse.txt": {
        "0-1": "NV3", "0-2": "SYS", "0-3": "SYS", "1-2": "SYS", "1-3": "SYS", "2-3": "NV3",
    },
    "nvidia-smi-topo-m__h100-80gb-hbm3__1gpu__driver590.48.01__ansi-escapes.txt": {},
    "nvidia-smi-topo-m__v100-sxm2__1of4gpu-slurm-view__4-mlx5-columns__traverse.txt": {},
    "nvidia-smi-topo-m__h200__1gpu__driver580.159.04.txt": {},
    # truth audit: a GeForce on R610, the same ANSI header shape
    "nvidia-smi-topo-m__geforce-rtx-2080-super__1gpu__driver610.57.04__ansi-escapes.txt": {},
    # truth audit round 3: two H100 PCIe joined by NVLink bridges
    "nvidia-smi-topo-m__h100-pcie__2gpu-nv12__driver555.42.02.txt": {"0-1": "NV12"},
    # truth audit round 6: NICs, a bond, GPU NUMA ID columns, PHB-only boxes
    "nvidia-smi-topo-m__a100__8gpu-17nic-bond__gpu-numa-id.txt": _mesh(8, "NV12"),
    "nvidia-smi-topo-m__a10__4gpu-2nic-sys__gpu-numa-id.txt": _mesh(4, "SYS"),
    "nvidia-smi-topo-m__rtx-6000-ada__2gpu-2nic-phb__driver575.51.03__threadripper-wrx90.txt": {"0-1": "PHB"},
    "nvidia-smi-topo-m__geforce-gtx-1080-ti__2gpu-phb__no-nic.txt": {"0-1": "PHB"},
    "nvidia-smi-topo-m__geforce-rtx-2080-ti__2gpu-pix__autodl.txt": {"0-1": "PIX"},
    # round 30: 8 x RTX 4090, all SYS, saved without any legend
    "nvidia-smi-topo-m__rtx4090__8gpu-2nic-all-sys__no-legend__go-gpuallocator-17.txt": _mesh(8, "SYS"),
    # round 30: an 8-GPU PCIe box's `topo -m` cut after GPU4's row (the pairs its whole rows give)
    "nvidia-smi-topo-m__8gpu-pix-phb-sys-mlx4__copied-command__cut-after-gpu4-row__kubernetes-53497.txt": {
        **{f"{a}-{b}": "SYS" for a in range(4) for b in range(4, 8)},
        "0-1": "PIX", "0-2": "PHB", "0-3": "PHB", "1-2": "PHB", "1-3": "PHB", "2-3": "PIX",
        "4-5": "PIX", "4-6": "PHB", "4-7": "PHB",
    },
    # `topo -mp` (PCIe paths of NVLink boxes; the benchmark's own probe runs `topo -m`)
    "nvidia-smi-topo-mp__a100__4gpu-4nic__juwels-booster.txt": _mesh(4, "SYS"),
    "nvidia-smi-topo-mp__a100__4gpu-2nic__levante.txt": _mesh(4, "SYS"),
    # round 24: the first 4 rows of 8 x B200 reports whose NIC labels a paste glued together
    "nvidia-smi-topo-m__b200__8gpu-12nic__header-nic11cpu-affinity-glued__first-4-rows__vllm-20862.txt": {
        f"{i}-{j}": "NV18" for i in range(4) for j in range(i + 1, 8)
    },
    "nvidia-smi-topo-m__b200__8gpu-13nic__header-nic11nic12-glued__first-4-rows__vllm-31594.txt": {
        f"{i}-{j}": "NV18" for i in range(4) for j in range(i + 1, 8)
    },
    # round 32: rows of an 8 x B200 matrix saved without its header row: the live probe's own
    # output always has one, so the benchmark's reader finds no matrix (api/offline reads it)
    "nvidia-smi-topo-m__b200__header-row-lost__gpu2-no-nvlink__cut-in-gpu6-row__vllm-16336.txt": None,
    # round 32: an 8 x H100 matrix with tabs, its NIC rows cut (every GPU row whole)
    "nvidia-smi-topo-m__8x-h100-nv18__tab-separated-9-nics__cut-in-nic6-row__nccl-1453.txt": {
        f"{i}-{j}": "NV18" for i in range(8) for j in range(i + 1, 8)
    },
    # round 34: an 8-GPU NV18 matrix cut inside GPU6's row (the pairs of rows 0-5, whole)
    "nvidia-smi-topo-m__8gpu-nv18-9nic__cut-in-gpu6-row__sglang-13973.txt": {
        f"{i}-{j}": "NV18" for i in range(6) for j in range(i + 1, 8)
    },
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(TOPOLOGIES))
def test_topology_of_every_real_capture(name: str) -> None:
    assert gp.parse_topology((REAL / name).read_text()) == TOPOLOGIES[name]


def test_every_real_topology_capture_is_covered() -> None:
    assert {p.name for p in REAL.glob("nvidia-smi-topo-m*")} == set(TOPOLOGIES)


@pytest.mark.parametrize(("code", "read"), [(0, True), (14, True), (15, False), (9, False)])
def test_topology_is_read_at_the_inforom_warning_exit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, read: bool
) -> None:
    """nvidia-smi's exit 14 (infoROM corrupted) is a whole answer beside a warning: the NVLink
    pairs are still known, so the NVLink floor is applied; 15 (a GPU fallen off the bus) and 9
    (no driver) are partial answers or none. A real process prints a real capture."""
    capture = REAL / "nvidia-smi-topo-m__h200__8gpu-10nic.txt"
    smi = tmp_path / "nvidia-smi"
    smi.write_text(
        f"#!/bin/sh\ncat '{capture}'\necho 'WARNING: infoROM is corrupted at gpu 0000:18:00.0' >&2\n"
        f"exit {code}\n"
    )
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    assert gp.topology() == (_mesh(8, "NV18") if read else None)


def test_topology_of_other_text_is_none() -> None:
    assert gp.parse_topology("") is None
    assert gp.parse_topology((REAL / "nvidia-smi__h200__1gpu__driver580.159.04.txt").read_text()) is None


# --------------------------------------------------------------------------- sampler


BENCH_FIELDS = tuple(
    "index,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit,"  # noqa: SIM905
    "clocks_throttle_reasons.active,utilization.gpu".split(",")
)  # the fields of gpu_benchmark's sampler, which recorded the capture below


def test_sampler_summary_of_a_real_h200_run() -> None:
    """Our own capture: ResNet-50 on 1 x H200, 114 samples (idle clocks at first, then 1980 MHz)."""
    text = (
        REAL / "nvidia-smi-query-gpu-sampler__h200__1gpu__driver580.159.04__resnet50-load.csv"
    ).read_text()
    rows = gp.parse_samples(text, BENCH_FIELDS)
    assert len(rows) == 114 and {r["index"] for r in rows} == {0}
    s = gp.summarize_window(rows, 0, None, None)
    assert s["samples"] == 114
    assert s["sm_clock_first_mhz"] == 345.0  # median of the first 11 samples: idle before the load
    assert s["sm_clock_last_mhz"] == 1980.0
    assert (s["sm_clock_min_mhz"], s["sm_clock_max_mhz"]) == (345.0, 1980.0)
    assert s["temp_max_c"] == 54.0 and s["power_limit_w"] == 700.0
    assert s["reasons"] == dict.fromkeys(gp.REASONS, 0) | {"gpu_idle": 14, "sw_power_cap": 18}
    assert gp.pcie_seen(rows, 0) is None  # that sampler did not ask for the link
    assert gp.summarize_window(rows, 1, None, None)["samples"] == 0


def test_sampler_reads_a_header_with_units_and_newer_field_names() -> None:
    """A real `--format=csv` capture under load (H200, driver 590): units in the header and the
    values, `clocks.current.sm` and `clocks_event_reasons.active` for our names."""
    text = (REAL / "nvidia-smi-query-gpu__h200__1gpu__driver590.48.01__load.csv").read_text()
    [row] = gp.parse_samples(text)
    assert row["index"] == 0 and row["clocks.sm"] == 1980.0 and row["power.draw"] == 627.4
    assert row["clocks_throttle_reasons.active"] == 0.0 and row["utilization.gpu"] == 100.0
    assert row["timestamp"] == time.mktime(time.strptime("2026/07/03 22:11:09", "%Y/%m/%d %H:%M:%S")) + 0.763
    assert gp.pcie_seen([row], 0) == {"gen": 5, "width": 16}


def test_sampler_window_and_link() -> None:
    """Rows outside the sustained window are left out; the link is the highest seen (idle links
    train down); reason bits past the table are named by number."""
    t = time.mktime(time.strptime("2026/01/02 03:04:05", "%Y/%m/%d %H:%M:%S"))
    lines = [
        f"2026/01/02 03:04:{5 + k:02d}.000, 0, {clock}, 1980, {60 + k}, 650.5, 700.00, {gen}, 16, {mask},"
        " 100, 00000000:1B:00.0"
        for k, (clock, gen, mask) in enumerate(
            [(1980, 1, "0x0"), (1980, 5, "0x4"), (1900, 5, "0x40"), (1700, 4, "0x800"), (1500, 5, "0x0")]
        )
    ]
    rows = gp.parse_samples("\n".join(["garbage, line", *lines]))
    assert len(rows) == 5 and rows[0]["timestamp"] == t
    s = gp.summarize_window(rows, 0, t + 1, t + 3)
    assert s["samples"] == 3 and s["sm_clock_first_mhz"] == 1980.0 and s["sm_clock_last_mhz"] == 1700.0
    assert s["temp_max_c"] == 63.0 and s["temp_median_c"] == 62.0 and s["power_median_w"] == 650.5
    assert s["reasons"]["sw_power_cap"] == 1 and s["reasons"]["hw_thermal_slowdown"] == 1
    assert s["reasons"]["bit 11"] == 1
    assert gp.pcie_seen(rows, 0) == {"gen": 5, "width": 16} and gp.pcie_seen(rows, 3) is None


def test_sampler_rows_are_a_gpus_by_pci_address_not_cuda_index() -> None:
    """Our real H200 sampler capture under load, in-test given the link and address columns and
    copied to a second GPU (nvidia-smi's GPU 1 at 00000000:3B:00.0, its power edited to 100 W and
    its link to Gen3 x16): under CUDA_VISIBLE_DEVICES=1 CUDA's device 0 is that GPU, and its rows
    were taken by index (GPU 0's: 700 W class, no link); by its address they are its own."""
    text = (
        REAL / "nvidia-smi-query-gpu-sampler__h200__1gpu__driver580.159.04__resnet50-load.csv"
    ).read_text()
    lines = []
    for line in text.splitlines():
        cells = line.split(", ")
        lines.append(", ".join([*cells, "5", "16", "00000000:19:00.0"]))
        cells[0], cells[4] = "1", "100.00"
        lines.append(", ".join([*cells, "3", "16", "00000000:3B:00.0"]))
    fields = (*BENCH_FIELDS, "pcie.link.gen.current", "pcie.link.width.current", "pci.bus_id")
    rows = gp.parse_samples("\n".join(lines), fields)
    assert len(rows) == 228 and rows[1]["pci.bus_id"] == "0:3b:00.0"
    s = gp.summarize_window(rows, 0, None, None, "00000000:3B:00.0")  # torch's pci ids of device 0
    assert s["samples"] == 114 and s["power_median_w"] == 100.0
    assert gp.pcie_seen(rows, 0, "0000:3b:00.0") == {"gen": 3, "width": 16}
    # an address no row has: no other GPU's rows; no address: by index, as before
    assert gp.summarize_window(rows, 0, None, None, "00000000:99:00.0")["samples"] == 0
    assert gp.pcie_seen(rows, 0) == {"gen": 5, "width": 16}
    assert "pci.bus_id" in gp.SAMPLE_FIELDS


def test_estimates_match_the_modes() -> None:
    """quick: about 2 minutes on 8 GPUs; full: about 10 minutes (the issue's targets)."""
    quick, full = gp.MODES["quick"], gp.MODES["full"]
    assert 90 <= gp.estimate_s(8, *quick, cuda=True) <= 200
    assert 400 <= gp.estimate_s(8, *full, cuda=True) <= 720
    assert gp.estimate_s(1, *quick, cuda=True) < gp.estimate_s(8, *quick, cuda=True)
    assert gp.estimate_s(1, 0.15, 0, cuda=False) < 5
