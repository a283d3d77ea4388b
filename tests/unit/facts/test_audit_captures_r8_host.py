"""The truth audit's eighth round, host outputs (its part of tests/unit/facts/audit_captures.py).
R8-B1: a `df` cut in the middle of a row was read as whole, and the ordered data disk "is not a
mount point" though it may be in the missing part; R8-B2: util-linux 2.13-2.19 label sockets
`CPU socket(s):`, which was not read, and the unread core count became a claim that only
hyperthreads meet the order; R8-B3: a multi-line NVRM message in syslog form (each line with its
own prefix) was split at its `(PCI ID: ...)` line, losing the GPU's address. Each value below was
read off the capture by hand; each test fails without its fix."""

from __future__ import annotations

import pytest

from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts import disks
from gpuonboard.facts.cpu import parse_lscpu
from gpuonboard.facts.kernel_log import parse_kernel_log
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.inventory import DataDiskSpec, OrderSpec
from gpuonboard.steps.checks.host_rules import rule_cpu, rule_data_disk

from .audit_captures import read, saved

DF_CUT = "df-h__zh-cn__ascend910b-node__lustre-s3fs__cut-mid-line.txt"
PHENOM = "lscpu__amd-phenom-ii-4core__util-linux-2.17-cpu-sockets-label.txt"
LUCID_I3 = "lscpu__intel-core-i3-2c4t__util-linux-2.17-lucid.txt"
SYSLOG = "dmesg-syslog__h100-hgx__fallen-off-bus-multiline-no-xid__driver525.125.06.txt"


def data_disk(mount: str, text: str) -> tuple[str, str]:
    order = OrderSpec(data_disk=DataDiskSpec(mount, 10**12))
    check = rule_data_disk(order, parse_facts({"df": ProbeOutput(text, "", 0)}), 0.03)
    return check.verdict, check.actual


def test_r8_b1_a_df_cut_mid_row_is_not_read_as_whole() -> None:
    text = read(DF_CUT)
    # its last line: `tmpfs   766G  192K  766G  ` (no Use%, no mount point)
    assert disks.df_cut(text) == "a row has 4 of df's 6 columns (tmpfs)"
    assert len(disks.parse_df(text)) == 29  # the 29 whole rows are still read
    assert data_disk("/data", text) == (
        "unverified",
        "unknown: /data is not in the df output, which is cut short",
    )
    # a mount that is in the part read is judged as before: /mnt/data01, 3.0T on /dev/nvme1n1p1
    verdict, actual = data_disk("/mnt/data01", text)
    assert verdict != "unverified" and actual.startswith("/dev/nvme1n1p1 at /mnt/data01")


@pytest.mark.parametrize("keep", [0.3, 0.6, 0.9])
def test_r8_b1_every_real_df_cut_mid_row_says_so(keep: float) -> None:
    """The class: any real df cut inside a row (not at a line's end) is not whole, and a mount
    not in it is unverified, never 'not a mount point'."""
    from .audit_captures import REAL

    for path in sorted(REAL.glob("df-[hP]*")):
        text = path.read_text()
        lines = text.splitlines()
        if len(lines) < 3 or disks.df_cut(text) or not disks.parse_df(text):
            continue  # (not whole, or not read at all: a df in a language not read)
        if path.name.startswith("df-h-paths"):
            continue  # (`df -h PATHS` lists only the paths asked: a mount not in it is unverified)
        n = max(2, int(len(lines) * keep))
        cut = "\n".join(lines[: n - 1] + [" ".join(lines[n - 1].split()[:3])])
        assert disks.df_cut(text) is None, path.name
        assert disks.df_cut(cut), path.name
        assert data_disk("/no/such/mount", cut)[0] == "unverified", path.name
        assert data_disk("/no/such/mount", text)[0] == "fail", path.name


@pytest.mark.parametrize(
    ("name", "want"),
    [
        (PHENOM, (1, 4, 1, 4, 4)),  # CPU socket(s): 1, Core(s) per socket: 4, Thread(s) per core: 1
        (LUCID_I3, (1, 2, 2, 4, 2)),  # 1 x 2 cores x 2 threads
    ],
)
def test_r8_b2_util_linux_2_17_sockets_are_read(name: str, want: tuple[int, ...]) -> None:
    info = parse_lscpu(read(name))
    got = (info.sockets, info.cores_per_socket, info.threads_per_core, info.logical_cpus, info.physical_cores)
    assert got == want
    assert info.warnings == ()


def test_r8_b2_an_order_met_by_the_cores_passes_and_hyperthreads_are_told_apart() -> None:
    check = rule_cpu(OrderSpec(cpu_cores=4), saved(PHENOM))
    assert (check.verdict, check.actual) == ("pass", "4 cores / 4 threads")
    check = rule_cpu(OrderSpec(cpu_cores=2), saved(LUCID_I3))
    assert (check.verdict, check.actual) == ("pass", "2 cores / 4 threads")
    check = rule_cpu(OrderSpec(cpu_cores=4), saved(LUCID_I3))  # 2 cores, 4 threads
    assert (check.verdict, check.detail) == ("warn", "the order is met only by counting hyperthreads")


def test_r8_b2_an_unread_core_count_is_no_hyperthread_claim() -> None:
    """Sockets left out (the label as an older or other lscpu prints it): at least CPU(s) /
    threads per core cores; an order above that bound is unverified, not 'hyperthreads'."""
    text = "\n".join(line for line in read(LUCID_I3).splitlines() if not line.startswith("CPU socket(s)"))
    facts = parse_facts({"lscpu": ProbeOutput(text, "", 0)})
    assert facts.cpu is not None and facts.cpu.physical_cores is None
    check = rule_cpu(OrderSpec(cpu_cores=2), facts)
    assert (check.verdict, check.actual) == (
        "pass",
        "? cores / 4 threads: at least 2 cores (4 CPUs, 2 per core)",
    )
    check = rule_cpu(OrderSpec(cpu_cores=3), facts)
    assert (check.verdict, check.actual) == (
        "unverified",
        "? cores / 4 threads: the core count is not in this lscpu output",
    )
    assert check.detail.startswith("lscpu gave 4 CPUs and 2 threads per core but no Socket(s)")
    assert rule_cpu(OrderSpec(cpu_cores=5), facts).verdict == "fail"  # fewer CPUs than cores ordered


def test_r8_b3_a_syslog_multi_line_nvrm_message_keeps_its_address() -> None:
    # three lines, each `Jan  3 07:39:45 ubuntu kernel: [17257.355375] NVRM: ...`: The NVIDIA GPU
    # 0000:5d:00.0 / (PCI ID: 10de:2330) installed in this system has / fallen off the bus ...
    events = [e for e in parse_kernel_log(read(SYSLOG)).events if e.fault == "fallen_off_bus"]
    assert [(e.pci, e.lines) for e in events] == [("0000:5d:00.0", 1)]
    assert events[0].message.startswith("The NVIDIA GPU 0000:5d:00.0 (PCI ID: 10de:2330) installed")


def test_r8_b3_lines_of_other_printks_are_not_joined() -> None:
    """Same second, another microsecond stamp: two records. The driver's message about one GPU
    (`The NVIDIA GPU <address>` ...) goes on over its next records until a sentence ends (a newer
    driver prints each of its lines as a record of its own: leptonai/gpud's B200 capture,
    tests/unit/facts/test_kernel_log_nvrm.py), so these two are one message the log ends inside:
    unread and cut, never nothing (round 24 changed this test: it asserted no event)."""
    log = (
        "Jan  3 07:39:45 ubuntu kernel: [17257.355375] NVRM: The NVIDIA GPU 0000:5d:00.0\n"
        "Jan  3 07:39:45 ubuntu kernel: [17257.355380] NVRM: (PCI ID: 10de:2330) installed in this"
        " system has\n"
    )
    (event,) = parse_kernel_log(log).events
    assert (event.kind, event.pci, bool(event.cut)) == ("xid_unread", "0000:5d:00.0", True)
    # records of other messages (a sentence ended) stay apart
    other = (
        "Jan  3 07:39:45 ubuntu kernel: [17257.418931] NVRM: The NVIDIA probe routine failed for 1"
        " device(s).\n"
        "Jan  3 07:39:45 ubuntu kernel: [17257.418954] NVRM: loading NVIDIA UNIX x86_64 Kernel Module "
        " 525.125.06\n"
    )
    assert [e.fault for e in parse_kernel_log(other).events] == ["probe_failed"]


DMESG_H = "dmesg-H__rtx3090-aarch64-rockchip__bar-invalid-fallen-off-bus-no-xid.txt"


def test_r8_b4_every_time_form_of_dmesg_h_reads_as_a_kernel_log_line() -> None:
    """`dmesg -H` stamps `[Nov18 10:51]` then `[  +0.000040]`: the file was recognised only
    because half its lines say NVRM; a log of the same form with fewer would be refused."""
    from gpuonboard.api.saved_kinds import detect_kind, kernel_shaped

    text = read(DMESG_H)
    stamped = [line for line in text.splitlines() if line and not line.startswith(" ")]
    assert all(kernel_shaped(line) for line in stamped)
    quiet = "\n".join(line for line in stamped if "NVRM" not in line)  # its other 14 lines
    assert detect_kind(quiet) == "kernel_log"
    for line in (
        "Oct 02 10:41:07.123456 gpu01 kernel: nvidia-nvlink: Nvlink Core is being initialized",
        "2024-01-03T07:39:45.355375+00:00 gpu01 kernel: nvidia: loading out-of-tree module",
    ):  # journalctl -o short-precise, RFC 3339 syslog
        assert kernel_shaped(line), line
    # not a kernel line: iperf3's text report, a prompt
    assert not kernel_shaped("[  5]   0.00-1.00   sec  1.10 GBytes  9.42 Gbits/sec")
    assert not kernel_shaped("[root@gpu01 ~]# dmesg -H")
    facts = saved(DMESG_H)
    events = facts.raw["kernel_log"].stdout  # read as the kernel log probe
    assert "fallen off the bus" in events
