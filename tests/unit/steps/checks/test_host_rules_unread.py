"""The ram and data_disk rules tell apart an output not given, a tool that did not run, and an
output given from which nothing could be read: only the tool that did not run fails ("never
conclude from absence"); an output not understood is `unverified`, with a sentence saying so."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.inventory import DataDiskSpec, OrderSpec
from gpuonboard.steps.checks.host_rules import _counted, rule_cpu, rule_data_disk, rule_ram

from ...offline_judge import judged_box, verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
ORDER = OrderSpec(ram_bytes=2**30, data_disk=DataDiskSpec("/mydata/data", 9 * 10**9))
# a `free` whose Mem row has no size (cut in the middle of its total), and a df cut after its
# header: both ran (exit 0) and printed, yet nothing can be read from them
FREE_UNREAD = "              total        used        free\nMem:        ???\n"
DF_UNREAD = "Filesystem     1K-blocks    Used Available Use% Mounted on\n"


def test_a_free_given_but_unreadable_or_not_run_is_unverified() -> None:
    check = rule_ram(ORDER, parse_facts({"free": ProbeOutput(FREE_UNREAD, "", 0)}), 0.03)
    assert (check.verdict, check.actual) == (
        "unverified",
        "unknown: no Mem total could be read from the free output",
    )
    assert "free -k" in check.detail
    # the live probe's `free -k` where free is not installed (exit 127): nothing is known of the
    # RAM, which is no hardware claim (it failed "free not available")
    missing = rule_ram(ORDER, parse_facts({"free": ProbeOutput("", "sh: 1: free: not found", 127)}), 0.03)
    assert (missing.verdict, missing.actual) == ("unverified", "unknown: free is not installed on the host")
    not_given = rule_ram(ORDER, parse_facts({}), 0.03)
    assert (not_given.verdict, not_given.actual) == ("unverified", "not judged: no free output was given")


@pytest.mark.parametrize(
    ("not_run", "said"),
    [
        (ProbeOutput("", "sh: 1: df: not found", 127), "unknown: df is not installed on the host"),
        (
            ProbeOutput("", "df: cannot read table of mounted file systems", 1),
            "unknown: df failed (exit 1: df: cannot read table of mounted file systems)",
        ),
    ],
)
def test_a_df_given_but_unreadable_or_not_run_is_unverified(not_run: ProbeOutput, said: str) -> None:
    check = rule_data_disk(ORDER, parse_facts({"df": ProbeOutput(DF_UNREAD, "", 0)}), 0.03)
    assert (check.verdict, check.actual) == (
        "unverified",
        "unknown: no filesystem could be read from the df output",
    )
    assert "df -P -k" in check.detail
    failed = rule_data_disk(ORDER, parse_facts({"df": not_run}), 0.03)
    assert (failed.verdict, failed.actual) == ("unverified", said)


DF_H = "df-hT__sda2-xfs-root_sdb1-ext4-mydata.txt"
STALE = "df: /mnt/s3: Transport endpoint is not connected\n"


def test_a_df_that_could_not_read_one_mount_is_read_in_part() -> None:
    """GNU df prints the filesystems it could read and exits 1 where one mount is stale (NFS, FUSE,
    s3fs): the data disk among its rows passed; now it is read, where it failed "df not available"
    (NO-GO); a mount not among the rows is unknown, not missing."""
    text = (REAL / DF_H).read_text()
    found = rule_data_disk(ORDER, parse_facts({"df": ProbeOutput(text, STALE, 1)}), 0.03)
    assert found.verdict == "pass", found
    elsewhere = OrderSpec(data_disk=DataDiskSpec("/mnt/s3", 9 * 10**9))
    unknown = rule_data_disk(elsewhere, parse_facts({"df": ProbeOutput(text, STALE, 1)}), 0.03)
    assert (unknown.verdict, unknown.actual) == (
        "unverified",
        "unknown: /mnt/s3 is not in the df output, which lists only some filesystems",
    )
    assert unknown.detail.startswith(
        "df could not read every filesystem (exit 1: df: /mnt/s3: Transport endpoint is not connected)"
    )
    # a mount df does not name as unread is not in the part missing: missing, as with exit 0
    missing = OrderSpec(data_disk=DataDiskSpec("/data", 9 * 10**9))
    unread_elsewhere = "df: /scratch: Transport endpoint is not connected\n"
    assert (
        rule_data_disk(missing, parse_facts({"df": ProbeOutput(text, unread_elsewhere, 1)}), 0.03).verdict
        == "fail"
    )


def test_df_i_read_as_the_probe_would_is_unverified() -> None:
    """`df -i` in a run's raw folder (read as the df probe, not refused): no size column, so no
    mount is read; that is not a box without a data disk."""
    text = (REAL / "df-i__sda2-xfs-root_sdb1-ext4-mydata.txt").read_text()
    assert rule_data_disk(ORDER, parse_facts({"df": ProbeOutput(text, "", 0)}), 0.03).verdict == "unverified"


@pytest.mark.parametrize(
    "text",
    [
        (REAL / "df-h-path__pt-br__lvm-opt-10g.txt").read_text(),
        # the same capture, its header in English (df's C locale), its commas decimal points
        "Filesystem                       Size  Used Avail Use% Mounted on\n"
        "/dev/mapper/VG_PRINCIPAL-LV_OPT   10G  1.2G  8.9G  12% /opt\n",
    ],
)
def test_a_df_of_given_paths_without_root_leaves_the_data_disk_unverified(text: str) -> None:
    """A real `df -h /opt/ctmage` (only /opt listed, no / row; review O of round 24): it failed
    "/mydata/data is not a mount point; it lives on the system disk /" though df never showed
    /: where the data path lives is not known, so unverified."""
    check = rule_data_disk(ORDER, parse_facts({"df": ProbeOutput(text, "", 0)}), 0.03)
    assert check.verdict == "unverified", check
    assert check.actual == "unknown: /mydata/data is not in the df output, which lists only /opt"


def test_an_lscpu_json_cut_short_says_so() -> None:
    """chef/ohai#1760's `lscpu -J` of a Raspberry Pi 4, as the stored excerpt shows it (cut
    after `"field": "Socket(s):",`): cpu_cores said "lscpu gave no readable output" and to run
    lscpu on the box "to see why"; it names the JSON cut short, still unverified."""
    text = (REAL / "lscpu-J__raspberry-pi-4-cortex-a72__cut-inside-socket-field__ohai-1760.json").read_text()
    check = rule_cpu(OrderSpec(cpu_cores=4), parse_facts({"lscpu": ProbeOutput(text, "", 0)}))
    assert (check.verdict, check.actual) == (
        "unverified",
        "unknown: the `lscpu -J` output is cut short (its JSON does not close)",
    )
    # a JSON damaged inside, not cut, is no lscpu read either, and not called cut short
    damaged = text.replace('"lscpu": [', '"lscpu": [[', 1) + "]}]}]}]}"
    other = rule_cpu(OrderSpec(cpu_cores=4), parse_facts({"lscpu": ProbeOutput(damaged, "", 0)}))
    assert other.verdict == "unverified" and "cut short" not in other.actual


def test_one_core_counted_is_said_in_the_singular() -> None:
    """QubesOS/qubes-issues#5708's lscpu of a VM with 1 of its 4 vCPUs online: the failure said
    "lscpu counts 1 cores"; it says "1 core", the offline CPUs after it."""
    text = (REAL / "lscpu__threadripper-2950x__qubes-vm-1-of-4-online__qubes-issues-5708.txt").read_text()
    check = rule_cpu(OrderSpec(cpu_cores=4), parse_facts({"lscpu": ProbeOutput(text, "", 0)}))
    assert check.verdict == "fail"
    assert check.detail.startswith(
        "lscpu counts 1 core, fewer than the 4 ordered; and only 1 of 4 CPUs online"
    )


def test_one_core_and_one_thread_are_said_in_the_singular(tmp_path: Path) -> None:
    """jc's /proc/cpuinfo of an i5-8279U VM (2 sockets of 1 core) cut in the test to its first
    block, whole on its own (physical id 0, siblings 1): cpu_cores of 2 failed "1 cores / 1
    threads"; it says "1 core / 1 thread". So does the bound from CPUs alone ("at least 1 core")."""
    text = (REAL / "proc-cpuinfo__i5-8279u__vm-2socket-1core__jc.txt").read_text().split("\n\n")[0] + "\n"
    got = verdicts(tmp_path, "cpuinfo.txt", text, "cpu_cores: 2")["cpu_cores"]
    assert got == ("fail", "1 core / 1 thread (Intel(R) Core(TM) i5-8279U CPU @ 2.40GHz)")
    assert _counted(1, "core") == "1 core" and _counted("?", "thread") == "? threads"


def test_a_free_cut_after_its_header_is_an_incomplete_probe(tmp_path: Path) -> None:
    """A benchmark report's environment dump (tests/fixtures/real/SOURCES.md) whose `free` was
    kept cut inside its header (`               total        used  `), verbatim, saved beside
    the same box's --query-gpu CSV: the whole folder was refused as "not a recognised command
    output" (exit 2); the free is read as an incomplete probe, the RAM unverified, and the CSV
    still judged."""
    free = (REAL / "free__a100x4-node__cut-after-header__prism-report.txt").read_text()
    gpus = "index, name, memory.total [MiB], compute_cap, driver_version\n" + "".join(
        f"{i}, NVIDIA A100-SXM4-80GB, 81920 MiB, 8.0, 580.105.08\n" for i in range(4)
    )
    _, checks = judged_box(tmp_path, {"free.txt": free, "gpus.csv": gpus}, "ram: 512GB\ngpu_count: 4\n")
    assert (checks["ram"].verdict, checks["ram"].actual) == (
        "unverified",
        "unknown: free's output cut after its header",
    )
    assert checks["gpu_count"].verdict == "pass"


@pytest.mark.parametrize("probe", ["free", "df"])
def test_a_tool_that_printed_only_on_stderr_is_unverified_with_its_words(probe: str) -> None:
    """Live, `free -k` or df exiting 0 with nothing on stdout and one line on stderr (procps-ng's
    and coreutils' own words where /proc is not readable): unverified, the line quoted (it said
    "free printed nothing", hiding it)."""
    said = {
        "free": "free: Unable to create meminfo structure",
        "df": "df: cannot read table of mounted file systems: No such file or directory",
    }[probe]
    facts = parse_facts({probe: ProbeOutput("", said + "\n", 0)})
    check = rule_ram(ORDER, facts, 0.03) if probe == "free" else rule_data_disk(ORDER, facts, 0.03)
    assert (check.verdict, check.actual) == (
        "unverified",
        f"unknown: {probe} printed nothing on stdout, and on stderr: {said}",
    )
