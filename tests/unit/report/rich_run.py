"""A saved run that shows every part of the acceptance report at once, for the language and
layout tests: two hosts (GO with a warned and an unverified rule, NO-GO with a failed rule and a
failed container step), compat rows, benchmarks with a chart, vendor-number warnings, and raw
files that are verified, edited since the run (hash mismatch) and missing."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .summaries import _host, _run

RUN_ID = "20261129-000000-aaaa"
LONG_PATH = "/mnt/data/very/long/dataset/path/that/does/not/fit/on/a/phone/screen/imagenet-1k-train"


def _step(step: str, status: str, msg: str, duration: float) -> dict[str, Any]:
    return {"step": step, "status": status, "msg": msg, "check_mode": False, "duration": duration}


def rich_run(tmp_path: Path) -> Path:
    """Write the run under tmp_path/reports/RUN_ID; return its directory."""
    a = _host("gpu-node-01.example.internal", "pass", "8")
    a["rules"] += [
        {
            "name": "persistence_mode",
            "expected": "Enabled",
            "actual": "Disabled on GPU 0, 1, 2, 3, 4, 5, 6, 7",
            "verdict": "warn",
            "detail": "nvidia-smi -pm 1 (as root), or enable nvidia-persistenced",
        },
        {
            "name": "pcie_link",
            "expected": "Gen4 x16",
            "actual": "unknown",
            "verdict": "unverified",
            "detail": "lspci -vv needs root on this host: " + "LnkSta " * 12,
        },
        {
            "name": "data_disk",
            "expected": f"{LONG_PATH} >= 2 TB",
            "actual": "3.8 TB",
            "verdict": "pass",
            "detail": "",
        },
        {
            "name": "nvlink_links",
            "expected": "18 active links per GPU",
            "actual": "; ".join(f"GPU{i}: 18 x 26.562 GB/s" for i in range(8)),
            "verdict": "pass",
            "detail": "nvidia-smi nvlink -s: every link of every GPU up at its full speed",
        },
    ]
    a["benchmarks"] = [
        {"name": "matmul bf16", "value": 250.0, "unit": "TFLOPS", "reference": 312, "verdict": "pass"},
        {"name": "nccl all_reduce", "value": 180.0, "unit": "GB/s", "reference": 200, "verdict": "warn"},
    ]
    a["vendor_licence"] = "licence-pending"
    a["vendor_icp"] = "icp-pending"
    b = _host("gpu-node-02.example.internal", "fail", "4")
    b["steps"] += [
        _step(
            "container", "failed", "docker: Error response from daemon: could not select device driver", 2.5
        ),
        _step("gpu_benchmark", "skipped", "no container runtime", 0.0),
    ]
    for h in (a, b):
        for st in h["steps"]:
            st["msg"] = f"{st['step']} done" if st["status"] == "ok" else st["msg"]
    run = _run(tmp_path, [a, b], RUN_ID)
    (run / "raw" / b["name"] / "nvidia_smi.txt").write_bytes(b"edited after the run\n")
    doc = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    doc.update(
        started="2026-11-29T00:00:00+00:00",
        finished="2026-11-29T00:03:12+00:00",
        inventory="inventory/hosts.yml",
    )
    for h in doc["hosts"]:
        for probe, rec in h["raw"].items():
            rec["file"] = f"raw/{h['name']}/{probe}.txt"
    flags = (
        "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ht"
    )
    lscpu = (
        f"Architecture: x86_64\nFlags: {flags} {flags} {flags}\n".encode()
    )  # (one line wider than a screen)
    (run / "raw" / a["name"] / "lscpu.txt").write_bytes(lscpu)
    doc["hosts"][0]["raw"]["lscpu"] = {
        "sha256": hashlib.sha256(lscpu).hexdigest(),
        "bytes": len(lscpu),
        "exit_code": 0,
        "file": f"raw/{a['name']}/lscpu.txt",
    }
    doc["hosts"][0]["raw"]["free"] = {
        "sha256": "0" * 64,
        "bytes": 5,
        "exit_code": 1,
        "file": f"raw/{a['name']}/free.txt",
    }
    (run / "summary.json").write_text(json.dumps(doc), encoding="utf-8")
    return run


def data_strings(run: Path) -> list[str]:
    """Every value the run records (summary.json's strings, numbers and the names it keys by,
    the short sha256 prefixes the evidence column shows): data, shown as recorded in any language.
    Not the status and verdict tokens: the report shows them as words of its language."""

    def walk(v: Any, key: str = "") -> Iterator[str]:
        if isinstance(v, dict):
            for k, x in v.items():
                if k in ("status", "verdict"):
                    continue
                if key == "raw":  # probe names
                    yield str(k)
                yield from walk(x, str(k))
        elif isinstance(v, list):
            for x in v:
                yield from walk(x, key)
        elif isinstance(v, str | int | float) and not isinstance(v, bool):
            yield str(v)
            if key == "sha256":
                yield str(v)[:16]

    doc = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    return sorted({v for v in walk(doc) if v.strip()}, key=len, reverse=True)
