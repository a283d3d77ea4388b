"""Every answer the box gives, over real SSH: a provider's policy block, an output cut short,
unverified as a verdict of its own, --strict, and the verdict and exit code computed once."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import Any

from conftest import Project, host_entry

from gpuonboard.testing import TestHostPool

H200_ORDER = {"gpu_model": "H200", "gpu_count": 1, "vram": "141GB"}
H100_ORDER = {"gpu_model": "H100 80GB", "gpu_count": 8, "vram": "80GB", "interconnect": "nvlink"}


def check(
    project: Project, pool: TestHostPool, name: str, *flags: str, **extra: Any
) -> tuple[int, dict[str, dict[str, str]], str]:
    project.write_inventory({name: host_entry(pool.hosts[name], pool, **extra)})
    r = project.cli("check", "--host", name, *flags)
    assert "Traceback" not in r.stdout + r.stderr
    return r.returncode, project.rules(name), r.stdout


def test_a_policy_blocked_xml_is_said_and_the_csv_shows_the_gpu_busy(
    project: Project, pool: TestHostPool
) -> None:
    """-q -x and -q refused by the provider's policy, the CSV under someone's load: the refusal is
    a fact in the report (never "repair the driver"), the GPU is read from the CSV, and 100 %
    utilisation with 31.6 GiB used is a busy GPU although the CSV lists no process (it got GO)."""
    code, rules, out = check(project, pool, "blocked", order=H200_ORDER)
    assert code == 1, out
    driver = rules["nvidia_driver"]
    assert driver["verdict"] == "pass", driver
    assert driver["actual"] == "driver 590.48.01, CUDA unknown"
    assert (
        "the host refuses nvidia-smi -q -x: ERROR: nvidia-smi XML output (-x) is disabled" in driver["detail"]
    )
    assert "the provider blocks these formats by policy" in driver["detail"]
    assert "repair" not in driver["detail"].lower()
    assert [rules[n]["verdict"] for n in ("gpu_model", "gpu_count", "vram")] == ["pass", "pass", "pass"]
    busy = rules["foreign_processes"]
    assert busy["verdict"] == "fail", busy
    assert "100 % utilisation" in busy["actual"] and "lists no processes" in busy["actual"]
    facts = project.summary()["hosts"][0]["facts"]
    assert facts["nvidia_smi_formats"] == ["csv"]
    assert facts["nvidia_smi_refused"][0].startswith("the host refuses nvidia-smi -q -x: ERROR:")
    line = " ".join(out.split())
    assert "verdict for blocked: NO-GO, failed: " in line and "foreign_processes" in line
    # (the test host's own CPU, RAM and disk are this machine's, below the vendor's default order)


def test_a_cut_off_probe_is_unverified_never_missing_gpus(project: Project, pool: TestHostPool) -> None:
    """ "Attached GPUs : 8" and one GPU half listed: no rule claims 7 GPUs are missing; the GPU
    rules are unverified (counted, not failed), and --strict fails them."""
    code, rules, out = check(project, pool, "cutprobe", order=H100_ORDER)
    count = rules["gpu_count"]
    assert count["verdict"] == "unverified", count
    assert "incomplete probe" in count["actual"] and "missing" not in count["actual"] + count["detail"]
    assert "rerun" in count["detail"]
    assert rules["nvidia_driver"]["verdict"] == "unverified"
    assert rules["interconnect"]["verdict"] == "unverified"  # no topo -m: neither PCIe nor NVLink seen
    host = project.summary()["hosts"][0]
    gpu_rules = {"nvidia_driver", "gpu_model", "gpu_count", "vram", "interconnect"}
    assert gpu_rules <= set(host["verdict"]["unverified"])
    assert not gpu_rules & set(host["verdict"]["failed"])  # (this machine's CPU/RAM/disk fail the order)
    assert code == (1 if host["verdict"]["failed"] else 0)
    junit = ET.parse(project.root / "reports" / "latest" / "junit.xml").getroot()
    case = junit.find(".//testcase[@name='gpu_count']")
    assert case is not None and case.find("skipped") is not None and case.find("failure") is None

    strict_code, strict_rules, strict_out = check(project, pool, "cutprobe", "--strict", order=H100_ORDER)
    assert strict_code == 1, strict_out
    assert strict_rules["gpu_count"]["verdict"] == "unverified"  # the fact is the same
    doc = project.summary()
    assert doc["strict"] is True and doc["exit_code"] == 1
    assert doc["hosts"][0]["verdict"]["word"] == "NO-GO"
    assert gpu_rules <= set(doc["hosts"][0]["verdict"]["failed"])
    junit = ET.parse(project.root / "reports" / "latest" / "junit.xml").getroot()
    case = junit.find(".//testcase[@name='gpu_count']")
    assert case is not None and case.find("failure") is not None


def test_a_gpu_only_order_is_go_with_the_unverified_rules_named(project: Project, pool: TestHostPool) -> None:
    """An order of GPU rules only, on the cut-off box: GO with 4 unverified (nothing failed),
    exit 0; the terminal, summary.json and `invoke report` say the same."""
    order = {"gpu_model": "H100 80GB", "gpu_count": 8, "interconnect": "nvlink"}
    entry = host_entry(pool.hosts["cutprobe"], pool, order=order)
    project.write_inventory({"cutprobe": entry}, defaults={"vendor": "demo-idc"})
    r = project.cli("provision", "--host", "cutprobe", "--only", "acceptance")
    assert r.returncode == 0, r.stdout + r.stderr
    line = " ".join(r.stdout.split())
    assert (
        "verdict for cutprobe: GO with 4 unverified: nvidia_driver, gpu_model, gpu_count, interconnect"
        in line
    )
    doc = json.loads((project.root / "reports" / "latest" / "summary.json").read_text())
    assert doc["exit_code"] == 0 and doc["hosts"][0]["verdict"]["word"] == "GO"
    rep = project.cli("report", "--format", "md")
    assert rep.returncode == 0, rep.stderr
    text = (project.root / "reports" / "latest" / "report.md").read_text()
    assert "with 4 unverified: nvidia_driver, gpu_model, gpu_count, interconnect" in text
    assert "UNVERIFIED" in text
