"""(round 34) The live probe reads the NVIDIA kernel module's own version file,
/proc/driver/nvidia/version, where nvidia-smi FAILS (a driver/library version mismatch, "couldn't
communicate with the NVIDIA driver"): then it is the only answer about the driver loaded now.
Read in the table probe after nvidia-smi's failure only (a healthy box reads no file more), it
is the same fact offline reading fills (facts/driver_module.py MODULE_PROBE): min_driver is judged
from the loaded module and nvidia_driver's failure names it, as for a saved session. Before, the
live probe never read it: min_driver said the module's "version is not read here".

Real outputs: the truenas-nvidia-drivers#19 session (tests/fixtures/sessions/SOURCES.md): its
nvidia-smi's mismatch failure and its `cat /proc/driver/nvidia/version`; neofetch#876's file
(tests/fixtures/real/SOURCES.md). The file is read at a temporary path in these probe runs, as
test_gather.py reads a mount table in /proc/self/mounts' place (the probe's path is a constant)."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from pathlib import Path

from gpuonboard.connection.gather import parse_facts
from gpuonboard.connection.probe_commands import core_probes
from gpuonboard.facts.driver_module import MODULE_FILE, MODULE_FILE_MARK, MODULE_PROBE, split_module_file
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.inventory import OrderSpec
from gpuonboard.steps.checks.driver_min import rule_min_driver
from gpuonboard.steps.checks.gpu_rules import rule_driver

from .test_gather import _run_probes

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
TRUENAS = (
    FIXTURES
    / "sessions"
    / "transcript__nvidia-smi-NVMLmismatch-library-580.178+proc-driver-version-580.173.02__truenas-19.txt"
).read_text()
_LINES = TRUENAS.splitlines(keepends=True)
FAILED = "".join(_LINES[1:3])  # (`Failed to initialize NVML: ...`, `NVML library version: 580.178`)
MODULE = "".join(_LINES[4:6])  # (the file's banner and GCC lines)
TABLE = FIXTURES / "real" / "nvidia-smi__a100-sxm4-40gb__1gpu__driver550.144.03.txt"
# nvidia-smi's return code of NVML_ERROR_LIB_RM_VERSION_MISMATCH (nvml.h: 18)
MISMATCH_EXIT = 18


def test_the_table_probe_s_output_splits_into_the_answer_and_the_module_file() -> None:
    out = f"{FAILED}\n{MODULE_FILE_MARK}\n{MODULE}"
    assert split_module_file(out) == (FAILED, MODULE)
    # (an answer without its last newline is given back as printed)
    assert split_module_file(f"{FAILED.rstrip()}\n{MODULE_FILE_MARK}\n{MODULE}") == (FAILED.rstrip(), MODULE)
    assert split_module_file(FAILED) == (FAILED, None)


def _judged(raw: dict[str, ProbeOutput]):  # type: ignore[no-untyped-def]
    facts = parse_facts(raw)
    return facts, rule_min_driver(OrderSpec(gpu_count=1, min_driver="580"), facts), rule_driver(facts)


def test_the_module_file_after_a_failure_is_the_fact_offline_reading_fills() -> None:
    """The table probe's answer as the live probe returns it: the mismatch, then the file."""
    out = ProbeOutput(f"{FAILED}\n{MODULE_FILE_MARK}\n{MODULE}", "", MISMATCH_EXIT)
    facts, min_driver, driver = _judged({"nvidia_smi_table": out})
    assert facts.raw[MODULE_PROBE] == ProbeOutput(MODULE, "", 0)
    assert facts.raw["nvidia_smi_table"].stdout == FAILED
    assert (min_driver.verdict, min_driver.actual) == (
        "pass",
        "580.173.02 (the loaded kernel module, /proc/driver/nvidia/version: `NVRM version: NVIDIA UNIX"
        " x86_64 Kernel Module 580.173.02`); nvidia-smi failed on a version mismatch: its NVML library"
        " is 580.178, not the module's",
    )
    assert driver.verdict == "fail", driver
    assert "the loaded kernel module is 580.173.02 (/proc/driver/nvidia/version)" in driver.actual, driver


def _box(tmp_path: Path, table_exit: int, table: str) -> tuple[Path, Path]:
    """A bin dir: nvidia-smi printing `table` (a real capture) and exiting `table_exit`, and a
    `cat` that logs each path it is given, then runs /bin/cat."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "answer").write_text(table)
    (bin_dir / "nvidia-smi").write_text(f"#!/bin/sh\n/bin/cat {tmp_path / 'answer'}\nexit {table_exit}\n")
    (bin_dir / "nvidia-smi").chmod(0o755)
    for tool in ("mkdir", "rm", "dd"):  # (the batched script's own tools: facts/probe.py)
        os.symlink(shutil.which(tool) or f"/bin/{tool}", bin_dir / tool)
    calls = tmp_path / "cat.calls"
    (bin_dir / "cat").write_text(f'#!/bin/sh\necho "$@" >> {calls}\nexec /bin/cat "$@"\n')
    (bin_dir / "cat").chmod(0o755)
    return bin_dir, calls


def _table_probe(tmp_path: Path, module_at: Path):  # type: ignore[no-untyped-def]
    """The live table probe with the module file read at `module_at` in MODULE_FILE's place."""
    [probe] = [p for p in core_probes() if p.name == "nvidia_smi_table"]
    mark = MODULE_FILE_MARK
    command = probe.command.replace(mark, "@").replace(MODULE_FILE, str(module_at)).replace("@", mark)
    return dataclasses.replace(probe, command=command)


def test_a_failed_nvidia_smi_reads_the_module_file_in_the_same_command(tmp_path: Path) -> None:
    """nvidia-smi fails on the mismatch (exit 18): the probe reads the file after it, in the same
    command, and min_driver is judged from the loaded module."""
    bin_dir, calls = _box(tmp_path, MISMATCH_EXIT, FAILED)
    module_at = tmp_path / "version"
    module_at.write_text(MODULE)
    facts = _run_probes(bin_dir, [_table_probe(tmp_path, module_at)], ["nvidia_smi_table"])
    assert facts.raw["nvidia_smi_table"].exit_code == MISMATCH_EXIT
    assert facts.raw["nvidia_smi_table"].stdout == FAILED
    assert facts.raw[MODULE_PROBE].stdout == MODULE
    assert f"{module_at}\n" in calls.read_text()
    min_driver = rule_min_driver(OrderSpec(gpu_count=1, min_driver="580"), facts)
    assert min_driver.verdict == "pass", min_driver
    assert min_driver.actual.startswith("580.173.02 (the loaded kernel module"), min_driver


def test_without_cat_the_shell_reads_the_module_file(tmp_path: Path) -> None:
    """A box without cat: the shell's builtins read the file, its output the same."""
    bin_dir, _ = _box(tmp_path, MISMATCH_EXIT, FAILED)
    os.remove(bin_dir / "cat")
    module_at = tmp_path / "version"
    module_at.write_text(MODULE)
    probe = _table_probe(tmp_path, module_at)
    done = subprocess.run(
        ["/bin/sh", "-c", probe.command],
        env={"PATH": str(bin_dir)},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == MISMATCH_EXIT, done
    assert done.stdout == f"{FAILED}\n{MODULE_FILE_MARK}\n{MODULE}", done


def test_a_healthy_nvidia_smi_reads_no_module_file(tmp_path: Path) -> None:
    """The real A100 table, exit 0: the file is not read (no cat of it), nothing added."""
    bin_dir, calls = _box(tmp_path, 0, TABLE.read_text())
    module_at = tmp_path / "version"
    module_at.write_text(MODULE)
    facts = _run_probes(bin_dir, [_table_probe(tmp_path, module_at)], ["nvidia_smi_table"])
    assert facts.gpu is not None and len(facts.gpu.gpus) == 1
    assert MODULE_PROBE not in facts.raw
    assert str(module_at) not in (calls.read_text() if calls.exists() else "")


def test_the_probe_reads_the_module_file_by_its_constant_path_only() -> None:
    """The path is written into the command, never a variable a host or an inventory could set."""
    [probe] = [p for p in core_probes() if p.name == "nvidia_smi_table"]
    assert f"cat {MODULE_FILE};" in probe.command and f"done <{MODULE_FILE};" in probe.command
    assert "$MODULE" not in probe.command and "${" not in probe.command


def test_a_failure_without_the_module_file_adds_nothing(tmp_path: Path) -> None:
    """nvidia-smi fails, and no module file is there (no driver loaded): nvidia-smi's answer as
    printed, no module fact, no error of the read in nvidia-smi's stderr."""
    bin_dir, _ = _box(tmp_path, MISMATCH_EXIT, FAILED)
    facts = _run_probes(bin_dir, [_table_probe(tmp_path, tmp_path / "absent")], ["nvidia_smi_table"])
    out = facts.raw["nvidia_smi_table"]
    assert (out.stdout, out.stderr, out.exit_code) == (FAILED, "", MISMATCH_EXIT)
    assert MODULE_PROBE not in facts.raw
