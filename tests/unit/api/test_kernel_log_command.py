"""A saved kernel log is judged as the log of the boot its copied command read: `journalctl -k
-b -1` is an earlier boot's log (its faults are history; "no Xid" there says nothing of the boot
the box runs now), `-b <boot id>` the boot it names, and `--since`, `dmesg -l err`, a rotated
`kern.log.1` only some lines. Before, each was read as the whole log of this boot: a previous
boot's log without an Xid passed gpu_xid. Derived from real captures (tests/fixtures/derived:
derive.py); each verdict test fails on the code before."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api.kernel_command import earlier_boot
from gpuonboard.api.narrowed import narrowed

from ..offline_judge import checks, verdicts

DERIVED = Path(__file__).parents[2] / "fixtures" / "derived"
PREVIOUS_BOOT = "journalctl-k-b-1__ubuntu-20.04-forum__boot-banner__derived.txt"
PREVIOUS_FAULT = "journalctl-k-b-1__h100-hgx__fallen-off-bus__derived.txt"


def test_a_previous_boots_log_without_an_xid_is_not_this_boots_pass(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "kern.txt", (DERIVED / PREVIOUS_BOOT).read_text())
    for rule in ("gpu_xid", "nvswitch_sxid"):
        verdict, actual = got[rule]
        assert verdict == "unverified", (rule, got[rule])
        assert "`journalctl -k -b -1` is the log of an earlier boot" in actual


def test_a_previous_boots_fault_is_reported_as_history(tmp_path: Path) -> None:
    found = {c.name: c for c in checks(tmp_path, "kern.txt", (DERIVED / PREVIOUS_FAULT).read_text())}
    xid = found["gpu_xid"]
    assert xid.verdict == "unverified", xid
    assert "GPU has fallen off the bus (logged before the log's last reboot)" in xid.actual
    assert "not the whole log of the boot the box runs now" in xid.detail


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("journalctl -k -b", ""),
        ("journalctl -k -b 0", ""),
        ("journalctl -b -k", ""),  # (`-k` is no boot: `-b` is this one)
        ("sudo journalctl -k --no-pager", ""),  # (`-k` implies `-b`)
        ("journalctl --dmesg --boot=-0", ""),
        ("journalctl", ""),  # (every boot the journal keeps: told apart by its lines)
        ("dmesg -T", ""),
        ("sudo dmesg --ctime --kernel", ""),
        ("cat /var/log/kern.log", ""),
        ("journalctl -k -b -1", "earlier boot"),
        ("sudo journalctl -kb -1 --no-pager", "earlier boot"),
        ("journalctl --boot=-2 --dmesg", "earlier boot"),
        ("journalctl -k -b-1", "earlier boot"),
        ("journalctl -k -b cd425eeb66eb46e591aabf0e5824e5cb", "the boot it names"),
        ("journalctl -k -b 3", "the boot it names"),
        ('journalctl -k --since "1 hour ago"', "only some of the boot's lines"),
        ("journalctl -k -p err", "only some of the boot's lines"),
        ("journalctl -k -n 200", "only some of the boot's lines"),
        ("journalctl -k -e", "only some of the boot's lines"),
        ("dmesg -l err", "only some of the log's lines"),  # (the driver logs an Xid at `warn`)
        ("dmesg --level=err,crit -T", "only some of the log's lines"),
        ("dmesg -F /var/log/dmesg.0", "reads a saved file"),
        ("cat /var/log/kern.log.1", "rotated log file"),
        ("zcat /var/log/kern.log.2.gz", "rotated log file"),
        ("cat /var/log/messages-20250105", "rotated log file"),
        ("grep -i nvrm /var/log/kern.log", "keeps only the lines grep let through"),
        ("tail -n 300 /var/log/syslog", "keeps only the lines tail let through"),
    ],
)
def test_which_part_of_the_log_a_command_read(command: str, why: str) -> None:
    said = narrowed("kernel_log", command)
    assert (why in said and said.startswith(f"`{command}`")) if why else said == "", said


@pytest.mark.parametrize(
    ("command", "earlier"),
    [
        ("journalctl -k -b -1", True),
        ("journalctl --boot=-3 -k | grep NVRM", True),
        ("journalctl -k -b", False),
        ("journalctl -k -b 0", False),
        ("journalctl -k -b 1", False),  # (the journal's first boot: maybe this one)
        ("journalctl -k -b cd425eeb66eb46e591aabf0e5824e5cb", False),
        ("dmesg -T", False),
    ],
)
def test_earlier_boot(command: str, earlier: bool) -> None:
    assert earlier_boot(command) is earlier


NO_ENTRIES = (
    Path(__file__).parents[2]
    / "fixtures"
    / "real"
    / "journalctl__no-entries-alone__identifier-filter__systemd-pr-1927.txt"
)


def test_journalctl_with_no_entries_is_an_empty_journal_not_a_usage_error(tmp_path: Path) -> None:
    """journalctl's `-- No entries --` alone (systemd pull request #1927) was refused as "not a
    recognised command output" (exit 2): it is the journal's answer, read as the live probe reads
    it: no kernel line to judge, unverified, saying why."""
    got = verdicts(tmp_path, "journal.txt", NO_ENTRIES.read_text())
    for rule in ("gpu_xid", "nvswitch_sxid"):
        verdict, actual = got[rule]
        assert verdict == "unverified"
        assert "journalctl printed only `-- No entries --`" in actual


# this boot's log beside the earlier boot's: a real `dmesg -T` of an H100 box (Xid 119 x5)
THIS_BOOT = (
    Path(__file__).parents[2] / "fixtures" / "real" / "dmesg-T__xid-119-gsp-timeout__h100-dell-xe9680.txt"
)


def _xid_of(tmp_path: Path, paths: list[str]) -> tuple[str, str, list[str]]:
    from gpuonboard.api import offline
    from gpuonboard.connection.gather import parse_facts

    notes: list[str] = []
    facts = parse_facts(offline.load_outputs(paths, notes))
    xid = next(c for c in offline.judge(facts, None) if c.name == "gpu_xid")
    return xid.verdict, xid.actual, notes


def test_an_earlier_boots_log_beside_this_boots_is_judged_as_one_log_of_two_boots(tmp_path: Path) -> None:
    """`journalctl -k -b -1` (the boot before: a GPU fell off the bus) and this boot's `dmesg
    -T` (Xid 119) of one box, in a folder or one saved session: the two were refused as rival
    kernel logs ("keep one of them", exit 2), the most natural use of `-b -1`. They are one log
    of two boots now: this boot's Xid fails, the earlier boot's fault is history."""
    folder = tmp_path / "box"
    folder.mkdir()
    (folder / "prev.txt").write_text((DERIVED / PREVIOUS_FAULT).read_text())
    (folder / "now.txt").write_text(THIS_BOOT.read_text())
    session = tmp_path / "session.txt"
    session.write_text(
        (DERIVED / PREVIOUS_FAULT).read_text() + "root@ubuntu:~# sudo dmesg -T\n" + THIS_BOOT.read_text()
    )
    for paths in ([str(folder)], [str(session)]):
        verdict, actual, notes = _xid_of(tmp_path, paths)
        assert verdict == "fail", (paths, actual)
        assert actual.startswith("GPU at PCI 0000:9b:00: Xid 119 GSP RPC Timeout x5 -> reset_gpu"), actual
        assert "GPU has fallen off the bus (logged before the log's last reboot) -> rebooted_since" in actual
        assert any("another boot" in n or "two boots" in n for n in notes), notes


def test_two_logs_of_this_boot_are_still_rival_views(tmp_path: Path) -> None:
    """Control: two kernel logs of one boot (neither `-b -1`) stay refused, as before."""
    from gpuonboard.errors import UsageError

    folder = tmp_path / "box"
    folder.mkdir()
    (folder / "a.txt").write_text(THIS_BOOT.read_text())
    (folder / "b.txt").write_text((DERIVED / PREVIOUS_FAULT).read_text().split("\n", 1)[1])
    with pytest.raises(UsageError, match="second kernel log output"):
        _xid_of(tmp_path, [str(folder)])


REAL = Path(__file__).parents[2] / "fixtures" / "real"
# every real kernel log that read the box (refusals and an empty journal give way instead; one
# device's AER lines without stamps are a one-kind excerpt, refused: test_offline.py)
CURRENT_LOGS = sorted(
    p.name
    for p in REAL.iterdir()
    if p.name.startswith(("dmesg", "journalctl"))
    and "refused" not in p.name
    and "no-entries" not in p.name
    and "pcieport-aer-fatal-root-port" not in p.name
    # (round 35: journals of other programs' lines only, no kernel line: refused saying so)
    and not p.name.startswith(("journalctl-b-1-p3__", "journalctl-u-"))
)


@pytest.mark.parametrize("name", CURRENT_LOGS)
def test_an_earlier_boots_log_without_faults_changes_nothing_of_this_boots_verdicts(
    tmp_path: Path, name: str
) -> None:
    """Each real log judged alone and beside an earlier boot's log with no fault (the forum's
    `journalctl -k -b -1`) gets the same gpu_xid / nvswitch_sxid: the two are read apart. Joined
    as one text, a current log whose first line has no stamp was taken as wrapped onto the
    reboot line (its Xids merged into one, an earlier boot's fault called current), a gVisor
    sandbox's log passed, and a grep of driver lines said it starts after boot."""
    alone_dir, both_dir = tmp_path / "alone", tmp_path / "both"
    alone_dir.mkdir()
    both_dir.mkdir()
    (alone_dir / name).write_bytes((REAL / name).read_bytes())
    (both_dir / name).write_bytes((REAL / name).read_bytes())
    (both_dir / "zz-previous.txt").write_text((DERIVED / PREVIOUS_BOOT).read_text())

    def judged(folder: Path) -> dict[str, tuple[str, str]]:
        from gpuonboard.api import offline
        from gpuonboard.connection.gather import parse_facts

        facts = parse_facts(offline.load_outputs([str(folder)]))
        return {c.name: (c.verdict, c.actual) for c in offline.judge(facts, None) if "xid" in c.name}

    assert judged(both_dir) == judged(alone_dir)


def test_an_earlier_boots_driver_refusal_never_explains_this_boots_failure(tmp_path: Path) -> None:
    """A refusal ("requires use of the NVIDIA open kernel modules") explains the RmInitAdapter
    failures of its own driver load only: given in an earlier boot's log, it said nothing of an
    RmInitAdapter failure of this boot's log (each log counts its loads from 0; they were taken
    for one load, and "GPU failed to initialise -> replace" was dropped). Lines of the real
    RTX 5090 capture: `-b -1` with a load and its refusal; `journalctl -k` with a load and its
    failure, then a reboot (two boots' loads, not one)."""
    lines = (
        REAL / "dmesg-grep-nvrm__requires-open-kernel-modules__rtx5090-laptop__driver580.105.08.txt"
    ).read_text()
    load, refusal, failure = lines.splitlines()[0], lines.splitlines()[1:3], lines.splitlines()[3:5]
    folder = tmp_path / "box"
    folder.mkdir()
    (folder / "prev.txt").write_text("\n".join(["$ journalctl -k -b -1", load, *refusal]) + "\n")
    # (`journalctl -k`: all boots the journal holds; the failure is of the boot before this one)
    (folder / "now.txt").write_text(
        "\n".join(["$ journalctl -k", load, *failure, "-- Reboot --", load]) + "\n"
    )
    verdict, actual, _ = _xid_of(tmp_path, [str(folder)])
    assert verdict == "fail", actual
    assert "GPU failed to initialise (RmInitAdapter failed) (logged before the log's last reboot)" in actual
    assert "does not support this GPU (logged before the log's last reboot) -> install_driver" in actual
