"""Live-only shapes of a failed probe call, on a real sshd test host: what a command that failed
printed is never read as the box's whole answer, and a reader refused is never a pass.

An nvidia-smi call that printed a GPU listing and then failed (nvidia-smi(1): 15 "GPU has fallen
off the bus", 6 "a query to find an object was unsuccessful", 255 "other error") was read as a
whole listing: a real 4 x A100 table whose call exited 15 failed an order of 8 GPUs with "4", a
hardware claim from an output nvidia-smi itself says failed (unverified now, the code named)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import Project, host_entry

from gpuonboard.testing import TestHost, TestHostPool
from gpuonboard.testing.toolbox import add_executable

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
# a real 4 x A100 SXM4 80GB table (thamada/gls)
TABLE = REAL / "nvidia-smi__a100-sxm4-80gb__4gpu__driver555.42.02.txt"
MISSING = "echo 'sh: 1: {0}: not found' >&2; exit 127"
EPERM = "echo 'dmesg: read kernel buffer failed: Operation not permitted' >&2; exit 1"
# `kernel.dmesg_restrict=1`, sudo that asks a password, journalctl without the adm group (its
# words as systemd 250 prints them: tests/fixtures/real/journalctl__refused-not-in-adm-group__*)
SUDO = "echo 'sudo: a password is required' >&2; exit 1"
JOURNAL = (
    "echo 'Hint: You are currently not seeing messages from other users and the system.'; "
    "echo '-- No entries --'"
)


def _tools(h: TestHost, tools: dict[str, str | None]) -> None:
    """The host's nvidia-smi and kernel log readers as given (None: not installed)."""
    for tool in ("nvidia-smi", "dmesg", "sudo", "journalctl"):
        body = tools.get(tool)
        add_executable(h.bin_dir, tool, f"#!/bin/sh\n{body if body is not None else MISSING.format(tool)}\n")


@pytest.fixture(scope="module")
def host(pool: TestHostPool) -> TestHost:
    if "failed-calls" not in pool.hosts:
        pool.add_many([("failed-calls", None)])
    return pool.hosts["failed-calls"]


@pytest.mark.parametrize("code", (15, 6, 255))
def test_a_gpu_listing_whose_call_failed_is_no_whole_listing(
    project: Project, pool: TestHostPool, host: TestHost, code: int
) -> None:
    """The table prints the real 4 GPUs and exits `code` (nothing on stderr); every other format
    exits `code` with nothing: 8 GPUs ordered are not known missing."""
    table = f'[ "$#" -eq 0 ] && cat {TABLE}; exit {code}'
    _tools(host, {"nvidia-smi": table, "dmesg": "echo '[    0.000000] Linux version 6.8.0-40-generic'"})
    project.write_inventory({"failed-calls": host_entry(host, pool, order={"gpu_count": 8})})
    r = project.cli("check", "--host", "failed-calls")
    assert "Traceback" not in r.stderr, r.stderr
    rules = project.rules("failed-calls")
    assert (rules["gpu_count"]["verdict"], rules["gpu_count"]["actual"]) == (
        "unverified",
        f"4 listed; incomplete probe: `nvidia-smi` failed (exit {code}): what it printed before may"
        " leave GPUs out",
    )


def test_a_kernel_log_no_reader_may_read_is_unverified(
    project: Project, pool: TestHostPool, host: TestHost
) -> None:
    """dmesg refused (`kernel.dmesg_restrict=1`), `sudo -n` asking a password, journalctl showing
    no kernel line to a login outside its groups: each refusal named, never a pass."""
    _tools(host, {"nvidia-smi": f"cat {TABLE}", "dmesg": EPERM, "sudo": SUDO, "journalctl": JOURNAL})
    project.write_inventory({"failed-calls": host_entry(host, pool, order={"gpu_count": 4})})
    r = project.cli("check", "--host", "failed-calls")
    assert "Traceback" not in r.stderr, r.stderr
    rules = project.rules("failed-calls")
    assert rules["gpu_count"]["verdict"] == "pass", rules["gpu_count"]
    for rule in ("gpu_xid", "nvswitch_sxid"):
        assert rules[rule]["verdict"] == "unverified", rules[rule]
        assert rules[rule]["actual"].startswith(
            "kernel log not readable: dmesg: read kernel buffer failed: Operation not permitted;"
            " sudo -n dmesg: sudo: a password is required; journalctl -k -b: Hint: "
        ), rules[rule]
