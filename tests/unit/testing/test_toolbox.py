"""Test-host hardware profiles: every referenced fixture exists and parses to the intended box."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuonboard.facts.cpu import parse_lscpu
from gpuonboard.facts.disks import parse_df, parse_lsblk_json
from gpuonboard.facts.memory import parse_free
from gpuonboard.facts.nvidia_smi import parse_any, parse_xml
from gpuonboard.facts.topo import interconnect, parse_topo
from gpuonboard.testing.toolbox import load_profile, render_toolbox

FIXTURES = Path(__file__).parents[2] / "fixtures"
PROFILES = Path(__file__).parents[3] / "src" / "gpuonboard" / "testing" / "profiles"
NAMES = [
    "a100-8x-nvlink",
    "rtx4090-1x",
    "a100-misdelivered",
    "no-driver",
    "h100-8x-throttled",
    "t4-busy",
    "a10-remap-pending",
    "h200-1gpu",
    "h200-policy-blocked",
    "h100-8x-cut-probe",
]
# profiles whose CPU, RAM and disks are the 2-socket EPYC box of test_host_side_commands
EPYC_HOSTS = [n for n in NAMES if n not in ("h200-1gpu", "h200-policy-blocked", "h100-8x-cut-probe")]


def load(name: str) -> dict[str, Any]:
    """One profile as a dict."""
    data = yaml.safe_load((PROFILES / f"{name}.yml").read_text())
    assert isinstance(data, dict)
    return data


def rule_file(profile: dict[str, Any], command: str, args: str) -> Path:
    """The fixture the replay rule for `command args` points at (first match wins)."""
    for rule in profile["replay"][command]:
        if rule["args"] in (args, "*"):
            return FIXTURES / rule["file"]
    raise AssertionError(f"no rule for {command} {args!r}")


def test_exactly_these_profiles() -> None:
    assert sorted(p.stem for p in PROFILES.glob("*.yml")) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_profile_shape_and_files_exist(name: str) -> None:
    profile = load(name)
    assert set(profile) == {"description", "replay", "absent"}
    assert isinstance(profile["description"], str) and "\n" not in profile["description"]
    assert isinstance(profile["absent"], list)
    for command, rules in profile["replay"].items():
        assert command not in profile["absent"]
        for rule in rules:
            assert {"args", "file"} <= set(rule) <= {"args", "file", "loop"}
            assert isinstance(rule["args"], str)
            assert (FIXTURES / rule["file"]).is_file(), rule["file"]
            assert rule["file"].startswith(("real/", "derived/", "edited/"))


# name, GPUs, model, interconnect, RAM bytes
EXPECTED = [
    ("a100-8x-nvlink", 8, "NVIDIA A100-SXM4-80GB", "nvlink", 2065715200 * 1024),
    ("rtx4090-1x", 1, "NVIDIA GeForce RTX 4090", "single", 2065715200 * 1024),
    ("a100-misdelivered", 4, "NVIDIA A100-SXM4-80GB", "pcie", 2017300 * 1024),
]


@pytest.mark.parametrize(("name", "gpus", "model", "kind", "ram"), EXPECTED)
def test_gpu_profiles_parse(name: str, gpus: int, model: str, kind: str, ram: int) -> None:
    profile = load(name)
    report = parse_xml(rule_file(profile, "nvidia-smi", "-q -x").read_text())
    assert report.attached_gpus == gpus
    assert len(report.gpus) == gpus
    assert {g.name for g in report.gpus} == {model}
    topo = parse_topo(rule_file(profile, "nvidia-smi", "topo -m").read_text())
    assert len(topo.gpus) == gpus
    assert interconnect(topo) == kind
    assert parse_free(rule_file(profile, "free", "-k").read_text()).total_bytes == ram
    for rule in profile["replay"]["nvidia-smi"]:
        if rule["args"] == "":
            table = parse_any((FIXTURES / rule["file"]).read_text())
            assert table.source == "table"
            assert [g.name for g in table.gpus] == [model] * gpus


@pytest.mark.parametrize("name", EPYC_HOSTS)
def test_host_side_commands(name: str) -> None:
    profile = load(name)
    cpu = parse_lscpu(rule_file(profile, "lscpu", "").read_text())
    assert (cpu.sockets, cpu.physical_cores, cpu.logical_cpus) == (2, 64, 64)
    assert rule_file(profile, "nproc", "").read_text() == "64\n"
    assert len(parse_df(rule_file(profile, "df", "-P -B1").read_text())) == 14
    assert (
        len(parse_lsblk_json(rule_file(profile, "lsblk", "-J -b").read_text())) == 23
    )  # 6 loop + 8 disk + 9 part


# health profiles: name, the nvidia-smi args that answer, GPU count, a fact that makes them useful
HEALTH = [
    ("h100-8x-throttled", "-q", 8, lambda g: "hw_slowdown" in g.clock_event_reasons),
    ("t4-busy", "-q -x", 1, lambda g: {p.pid for p in g.processes} == {675, 5762}),
    ("a10-remap-pending", "-q", 1, lambda g: g.remapped_rows_pending is True),
]


@pytest.mark.parametrize(("name", "args", "gpus", "fact"), HEALTH)
def test_health_profiles_parse(name: str, args: str, gpus: int, fact: Any) -> None:
    report = parse_any(rule_file(load(name), "nvidia-smi", args).read_text())
    assert len(report.gpus) == gpus
    assert all(fact(g) for g in report.gpus)


DERIVED_FREE_K = "derived/free-k__h200-vm__derived.txt"
# the real sampler stream in the monitor's fields, with the real -q's name/uuid/memory
DERIVED_MONITOR = "derived/nvidia-smi-query-gpu-monitor__h200__1gpu__driver580.159.04__derived.csv"


def test_h200_profile_is_one_real_box() -> None:
    profile = load("h200-1gpu")
    files = {rule["file"] for rules in profile["replay"].values() for rule in rules}
    # one machine; all real but free -k, derived exactly from the real free -b
    assert all(f.startswith("real/") and ("h200" in f) for f in files - {DERIVED_FREE_K, DERIVED_MONITOR}), (
        files
    )
    xml = parse_xml(rule_file(profile, "nvidia-smi", "-q -x").read_text())
    text = parse_any(rule_file(profile, "nvidia-smi", "-q").read_text())
    table = parse_any(rule_file(profile, "nvidia-smi", "").read_text())
    assert (xml.source, text.source, table.source) == ("xml", "text", "table")
    for report in (xml, text, table):
        assert [(g.name, g.memory_total_mib, g.pci_bus_id) for g in report.gpus] == [
            ("NVIDIA H200", 143771, "00000000:00:06.0")
        ]
        assert (report.driver_version, report.cuda_version) == ("580.159.04", "13.0")
    assert interconnect(parse_topo(rule_file(profile, "nvidia-smi", "topo -m").read_text())) == "single"
    cpu = parse_lscpu(rule_file(profile, "lscpu", "").read_text())
    assert (cpu.sockets, cpu.physical_cores, cpu.logical_cpus) == (1, 16, 16)
    assert parse_lscpu(rule_file(profile, "lscpu", "-J").read_text()) == cpu
    assert rule_file(profile, "nproc", "").read_text() == "16\n"
    assert parse_free(rule_file(profile, "free", "-b").read_text(), unit_bytes=1).total_bytes == 135148564480
    assert parse_free(rule_file(profile, "free", "-k").read_text()).total_bytes == 135148564480
    mounts = parse_df(rule_file(profile, "df", "-P -B1").read_text())
    assert [m.mountpoint for m in mounts] == ["/dev/shm", "/"]
    assert [d.name for d in parse_lsblk_json(rule_file(profile, "lsblk", "-J -b").read_text())] == [
        "zram0",
        "vda",
        "vdb",
    ]


def test_h200_profile_through_the_fact_probe(tmp_path: Path) -> None:
    """The rendered toolbox answers the real core probe script; the facts are the H200 VM's."""
    from gpuonboard.connection.gather import parse_facts
    from gpuonboard.connection.probe_commands import core_probes
    from gpuonboard.facts.probe import build_script, new_token, split_output

    bin_dir = render_toolbox(load_profile("h200-1gpu"), tmp_path / "host", FIXTURES)
    probes = core_probes()
    token = new_token()
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    out = subprocess.run(
        ["sh", "-c", build_script(probes, token)], capture_output=True, text=True, env=env, timeout=60
    )
    raw = split_output(out.stdout, out.stderr, token, [p.name for p in probes])
    facts = parse_facts(raw)
    summary = facts.summary()
    assert (summary["gpu_count"], summary["gpu_model"]) == (1, "NVIDIA H200")
    assert (summary["driver_version"], summary["cuda_version"]) == ("580.159.04", "13.0")
    assert (summary["interconnect"], summary["cpu_cores"], summary["logical_cpus"]) == ("single", 16, 16)
    assert facts.nproc == 16
    # every format the box answers is read and merged (-q -x, -q, the plain table; no CSV, no -L
    # replayed); -q -x is the richest, so every field is its own: no per-field provenance
    assert facts.gpu is not None and facts.gpu.source == "xml+text+table"
    assert facts.gpu.complete and [g.provenance for g in facts.gpu.gpus] == [()]
    # df -P -k is answered with the -P -B1 capture (the header carries the unit)
    assert [(m.mountpoint, m.size_bytes) for m in facts.mounts][1] == ("/", 270553174016)
    # free -k: derived from the real free -b capture (exactly /1024), so RAM is the box's to the byte
    assert raw["free"].exit_code == 0 and summary["ram_bytes"] == 135148564480


def test_no_driver_has_no_nvidia_smi() -> None:
    profile = load("no-driver")
    assert profile["absent"] == ["nvidia-smi"]
    assert "nvidia-smi" not in profile["replay"]
    assert parse_free(rule_file(profile, "free", "").read_text()).total_bytes == 2065715200 * 1024


def test_derived_fixtures_are_up_to_date() -> None:
    """derive.py, run in memory, reproduces every derived file byte for byte."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("derive", FIXTURES / "derived" / "derive.py")
    assert spec is not None and spec.loader is not None
    derive = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(derive)
    written: dict[str, str] = {}
    setattr(derive, "write", written.__setitem__)  # noqa: B010 - capture instead of writing
    assert derive.main() == 0
    assert set(written) == {p.name for p in (FIXTURES / "derived").iterdir() if "__derived" in p.name}
    for name, text in written.items():
        assert (FIXTURES / "derived" / name).read_bytes() == text.encode("utf-8"), name


def test_cut_probe_profile_is_an_incomplete_probe() -> None:
    """h100-8x-cut-probe: 'Attached GPUs : 8' and GPU 0 cut mid-record, nothing else answered."""
    profile = load("h100-8x-cut-probe")
    assert list(profile["replay"]) == ["nvidia-smi"]
    report = parse_any(rule_file(profile, "nvidia-smi", "-q").read_text())
    assert (report.source, report.attached_gpus, len(report.gpus), report.complete) == ("text", 8, 1, False)
    assert report.warnings == (
        "Attached GPUs says 8 but 1 GPU sections found",
        "the nvidia-smi -q output ends mid-record: incomplete probe, rerun",
    )


def test_policy_blocked_profile_refuses_xml_and_text_but_answers_the_csv() -> None:
    from gpuonboard.facts.gpu_merge import refusal_line
    from gpuonboard.facts.probe import ProbeOutput

    profile = load("h200-policy-blocked")
    for args in ("-q -x", "-q"):
        text = rule_file(profile, "nvidia-smi", args).read_text()
        assert refusal_line(ProbeOutput(text, "", 255)) == (
            "ERROR: nvidia-smi XML output (-x) is disabled on this instance by the provider's policy."
        )
    csv_rule = next(r for r in profile["replay"]["nvidia-smi"] if r["args"].startswith("--query-gpu="))
    report = parse_any((FIXTURES / csv_rule["file"]).read_text())
    assert (report.source, report.complete, [g.name for g in report.gpus]) == ("csv", True, ["NVIDIA H200"])
