"""A saved run for the report tests: a summary.json and the raw outputs it names, written under
tmp_path/reports/<run id> as a run leaves them."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any


def _host(name: str, verdict: str, actual: str) -> dict[str, Any]:
    return {
        "name": name,
        "address": "10.0.0.1",
        "port": 22,
        "vendor": "wuhan-idc",
        "vendor_name": "Wuhan Optics Valley IDC",
        "vendor_licence": "B1.B2-20200000",
        "vendor_icp": "鄂ICP备00000000号",
        "vendor_billing": {"unit": "hour", "rate": 58.0, "currency": "CNY", "monthly_rate": 28000},
        "status": "failed" if verdict == "fail" else "ok",
        "msg": "m",
        "host_key_fingerprint": "SHA256:abc",
        "duration": 1.0,
        "facts": {
            "gpu_count": 8,
            "gpu_model": "NVIDIA A100-SXM4-80GB",
            "driver_version": "535.54.03",
            "cuda_version": "12.2",
            "interconnect": "nvlink",
            "cpu_cores": 64,
            "ram_bytes": 10**12,
        },
        "order": {
            "gpu_model": "A100 80GB SXM",
            "gpu_count": 8,
            "vram_bytes": 80 * 10**9,
            "cpu_cores": 64,
            "ram_bytes": 10**12,
            "data_disk": None,
            "interconnect": "nvlink",
            "min_driver": "535",
        },
        "rules": [
            {"name": "gpu_count", "expected": "8", "actual": actual, "verdict": verdict, "detail": ""},
            {"name": "ram", "expected": ">= 1.0 TB", "actual": "1.0 TB", "verdict": "pass", "detail": ""},
        ],
        "steps": [
            {
                "step": "acceptance",
                "status": "ok",
                "msg": "ok",
                "check_mode": False,
                "duration": 0.1,
                "diff": None,
                "checks": [],
            },
            {
                "step": "driver_compat",
                "status": "ok",
                "msg": "ok",
                "check_mode": False,
                "duration": 0.1,
                "diff": None,
                "checks": [
                    {
                        "name": "ngc_driver",
                        "expected": ">= 535",
                        "actual": "535.54.03",
                        "verdict": "pass",
                        "detail": "",
                    }
                ],
            },
        ],
        "raw": {},
    }


def _run(tmp_path: Path, hosts: list[dict[str, Any]], run_id: str = "20261129-000000-aaaa") -> Path:
    run = tmp_path / "reports" / run_id
    for h in hosts:
        data = b"nvidia-smi output <b>\n"
        (run / "raw" / h["name"]).mkdir(parents=True)
        (run / "raw" / h["name"] / "nvidia_smi.txt").write_bytes(data)
        h["raw"] = {
            "nvidia_smi": {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data), "exit_code": 0}
        }
    doc = {
        "schema": "gpuonboard.summary/1",
        "tool_version": "0.1.0",
        "run_id": run_id,
        "playbook": "provision",
        "playbook_path": "p",
        "inventory": "i",
        "check_mode": False,
        "started": "s",
        "finished": "f",
        "duration": 1.0,
        "exit_code": 0,
        "recap": {},
        "hosts": hosts,
    }
    (run / "summary.json").write_text(json.dumps(doc), encoding="utf-8")
    return run
