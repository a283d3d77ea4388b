"""A kernel log reader that answers with no log, on a real sshd test host: `dmesg` that exits 0
and prints nothing (its ring buffer cleared: `dmesg -C`), and journalctl that prints only its
notice `No journal files were found.` and exits 0 (systemd before v246 prints it under `-q`:
systemd/systemd src/journal/journalctl.c access_check, read_file id 23436565). The live probe
read either as the kernel log and passed gpu_xid and nvswitch_sxid "no Xid in the kernel log
(the log read starts after boot)": a pass from absence. Now both are unverified, naming what each
reader said, and a reader after it is still tried."""

from __future__ import annotations

import pytest
from conftest import Project, host_entry

from gpuonboard.testing import TestHost, TestHostPool
from gpuonboard.testing.toolbox import add_executable

NO_JOURNAL = "No journal files were found."
EPERM = "echo 'dmesg: read kernel buffer failed: Operation not permitted' >&2; exit 1"
READERS = {
    # (dmesg, journalctl, what the rule says)
    "kl-cleared": ("exit 0", None, "dmesg: printed nothing"),
    "kl-nojournal": (EPERM, f"echo '{NO_JOURNAL}' >&2; exit 0", NO_JOURNAL),
}
LOG = "[    0.000000] Linux version 6.8.0-40-generic (buildd@lcy02-amd64-075) #40-Ubuntu SMP"


@pytest.fixture(scope="module")
def hosts(pool: TestHostPool) -> dict[str, TestHost]:
    names = [*READERS, "kl-journal"]
    missing = [n for n in names if n not in pool.hosts]
    if missing:
        pool.add_many([(n, None) for n in missing])
    return {n: pool.hosts[n] for n in names}


def _readers(h: TestHost, dmesg: str, journalctl: str | None) -> None:
    """The host's kernel log readers: `dmesg` and `journalctl` as given (None: not installed), no
    `sudo` (never this machine's own)."""
    add_executable(h.bin_dir, "dmesg", f"#!/bin/sh\n{dmesg}\n")
    missing = "#!/bin/sh\necho 'sh: 1: {0}: not found' >&2\nexit 127\n"
    journal = f"#!/bin/sh\n{journalctl}\n" if journalctl else missing.format("journalctl")
    add_executable(h.bin_dir, "journalctl", journal)
    add_executable(h.bin_dir, "sudo", missing.format("sudo"))


@pytest.mark.parametrize("name", list(READERS))
def test_a_reader_that_answers_no_log_is_no_evidence(
    project: Project, pool: TestHostPool, hosts: dict[str, TestHost], name: str
) -> None:
    dmesg, journalctl, said = READERS[name]
    h = hosts[name]
    _readers(h, dmesg, journalctl)
    project.write_inventory({name: host_entry(h, pool, order={"gpu_count": 1})})
    r = project.cli("check", "--host", name)
    assert "Traceback" not in r.stderr, r.stderr
    rules = project.rules(name)
    for rule in ("gpu_xid", "nvswitch_sxid"):
        assert rules[rule]["verdict"] == "unverified", rules[rule]
        assert rules[rule]["actual"].startswith("kernel log not readable: "), rules[rule]
        assert said in rules[rule]["actual"], rules[rule]


def test_the_journal_is_read_after_a_cleared_dmesg(
    project: Project, pool: TestHostPool, hosts: dict[str, TestHost]
) -> None:
    """dmesg prints nothing, the journal has this boot's log: it is read (control: a reader after
    the one that answered nothing is tried, and a log read passes)."""
    h = hosts["kl-journal"]
    _readers(h, "exit 0", f"echo '{LOG}'")
    project.write_inventory({"kl-journal": host_entry(h, pool, order={"gpu_count": 1})})
    r = project.cli("check", "--host", "kl-journal")
    assert "Traceback" not in r.stderr, r.stderr
    rules = project.rules("kl-journal")
    assert rules["gpu_xid"]["verdict"] == "pass", rules["gpu_xid"]
    assert rules["gpu_xid"]["actual"] == "no Xid in the kernel log", rules["gpu_xid"]
