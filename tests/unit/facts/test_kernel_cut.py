"""kernel_cut: whether a kernel log's last line, without its newline, may be the start of a line
a rule reads (facts/kernel_cut.py), one reading for gpu_xid's lines and host_hw_errors'. A line
that may be the start of one (a stamp, `EDAC MC1: 1`, `mce: [Hardware Err`) leaves the rule
unverified; a line of a known shape that is whole whatever followed it (the driver's load banner,
`EDAC amd64: Node 0: DRAM ECC enabled.`, a machine check's detail line) is read as whole. Every
log is a real capture (tests/fixtures/real), cut in the test."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.host_errors import host_errors, log_lines
from gpuonboard.facts.kernel_cut import ends_unfinished, host_cut, says_nothing
from gpuonboard.facts.kernel_log import parse_kernel_log
from gpuonboard.steps.checks.host_errors import rule_host_hw_errors
from gpuonboard.steps.checks.sxid_rules import rule_sxid
from gpuonboard.steps.checks.xid_rules import rule_xid

REAL = Path(__file__).parents[2] / "fixtures" / "real"
HOST_LOGS = (
    "dmesg__edac-ue-apei-pcie-recoverable__lwa-issues-117.txt",
    "kern-log__edac-ce-repeated-one-dimm__osm-operations-300.txt",
    "syslog__edac-sbridge-one-ce-scrub__radiasoft-devops-134.txt",
    "kern-log__mce-uncorrected-bank4-at-boot__mcelog-70.txt",
    "dmesg-grep-mce__mce-corrected-amd-bank17__rasdaemon-95.txt",
    "syslog__apei-corrected-memory-one-record__node-exporter-3511.txt",
)


@pytest.mark.parametrize(
    "name",
    [
        "dmesg-T-grep-NVRM__xid-43-31-94-rst-no__3gpu-vm__driver535.183.01.txt",
        "dmesg-grep-nvrm__requires-open-kernel-modules__rtx5090-laptop__driver580.105.08.txt",
        "dmesg__gsp-heartbeat-timeout-gpu6-no-pci__driver595.71.05.txt",
        "dmesg__nvrm-fallen-off-bus-no-xid__driver570.158.01.txt",
    ],
)
def test_the_drivers_load_banner_is_whole_without_its_newline(name: str) -> None:
    """Each real log cut at the end of its `NVRM: loading NVIDIA UNIX ... Kernel Module ...`
    banner, without the banner's newline: the driver's load banner names no fault however it went
    on and no line continues it, so gpu_xid judges the log as with the newline. (Before: "a driver
    message the log ends inside, cut short: 'NVRM: loading NVIDIA UNIX ...'", unverified where
    the log passed.)"""
    lines = (REAL / name).read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if "NVRM: loading NVIDIA UNIX" in line)
    whole = "".join(lines[: at + 1])
    cut = rule_xid(parse_kernel_log(whole.rstrip("\n")).events, True)
    assert (cut.verdict, cut.actual) == (
        (w := rule_xid(parse_kernel_log(whole).events, True)).verdict,
        w.actual,
    )
    assert "cut short" not in cut.actual


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("Feb 23 03:28:16 kernel: EDAC MC1: 1", "tag"),  # (radiasoft#134's CE line, cut before `CE`)
        ("[11219.196715] EDAC skx MC3: HANDLING MCE MEMORY ERROR", ""),  # (lwa-issues#117's last line)
        ("[    0.064265] mce: [Hardware Error]: CPU 0: Machine Ch", "tag"),  # (mcelog#70's bank line)
        ("[    0.644342] mce: [Hardware Error]: TSC 0 ADDR a8eb3fc80 MISC d01202dd01000000", ""),  # (#95)
        ("[    4.768515] MCE: In-kernel MCE decoding enabled.", ""),  # (rasdaemon#95)
        ("[11219.196653] {1}[Hardware Error]:   device_id: 0000:5e", "tag"),  # (an APEI record's line)
        ("[74889.542044] pcieport 0000:00:02.0: PCIe Bus Error: severity=Uncorr", "tag"),  # (gpu-burn#1)
        ("[74785.660380] pcieport 0000:00:02.0: PCIe Bus Error: severity=Corrected, type=Data", ""),
        ("[74889.542234] pcieport 0000:00:02.0: broadcast error_detected message", ""),
        ("May  7 06:45:12 errol kernel: [21584690.529877] ", "stamp"),  # (osm#300's stamps alone)
        ("[11219.1966", "stamp"),
    ],
)
def test_a_cut_last_line_is_a_host_errors_start_only_until_it_leaves_every_head(line: str, said: str) -> None:
    """Real lines, whole or cut: "tag" where the line may still become a host error's line, "stamp"
    where it says nothing yet, "" where it has left every error line's head."""
    assert host_cut(line) == said


def test_the_gpu_rules_reading_of_a_cut_line_is_unchanged() -> None:
    """says_nothing with its own heads reads the GPU drivers' tags as it did: a stamp and the start
    of `NVRM:` say nothing; an EDAC line says something (not a GPU driver's line)."""
    assert says_nothing("[ 1843.308145] NVR") and says_nothing("[Tue Apr 15 1")
    assert not says_nothing("[ 1843.308145] EDAC MC0: 1")


@pytest.mark.parametrize("name", HOST_LOGS)
def test_a_host_log_cut_inside_an_error_lines_head_never_passes_where_the_whole_does_not(name: str) -> None:
    """Each real host-error log cut at every point from the start of each error line's stamp to
    where the line is read whole (a corrected error's DIMM label closed by its ` (`, a bank's
    whole status, an APEI record's line): never a pass where the whole log warns or fails, and
    the whole log, its last newline dropped, reads as the whole. (A cut after that point is the
    log of an earlier moment, which no sign tells from a whole one.)"""
    text = (REAL / name).read_text()
    whole = rule_host_hw_errors(host_errors(*log_lines(text)))
    assert whole is not None
    dropped = rule_host_hw_errors(host_errors(*log_lines(text.rstrip("\n"))))
    assert dropped is not None and dropped.verdict == whole.verdict, (dropped, whole)
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    for start, end in zip(starts, starts[1:], strict=False):
        line = text[start:end]
        if not any(tag in line for tag in ("EDAC MC", "Machine Check", "event severity", "Bank ")):
            continue
        label = line.find(" (", line.find(" on ")) if "EDAC MC" in line and " on " in line else -1
        stop = start + label if label > 0 else end - 1
        for at in range(start + 1, stop + 1):
            check = rule_host_hw_errors(host_errors(*log_lines(text[:at])))
            if whole.verdict in ("fail", "warn"):
                assert check is None or check.verdict != "pass", (name, text[start:at], check)


RLSWARM = "dmesg__oom-kill-call-trace__arm-kvm-vps__line-cut-as-stored__rl-swarm-463.txt"


def test_a_log_ending_inside_any_line_never_passes() -> None:
    """Round 30 (rlswarm463): a real OOM-kill call trace whose paste ends inside a frame,
    `[597411.196475]  do_`, no newline after it (the file as found). The lines after it (an Xid
    among them) are lost: gpu_xid and nvswitch_sxid are unverified, quoting the line, never "no
    Xid". Edited in-test: the same log cut inside other lines of it (a frame's name, its offset
    before its length, a name inside a message, after a comma) reads cut too. (A cut that leaves
    a whole-looking token after a space, `Not taint`, `6.8.0-78-gen`, cannot be told from a whole
    one by its shape.)"""
    text = (REAL / RLSWARM).read_text()
    assert not text.endswith("\n") and text.endswith("]  do_")
    events = parse_kernel_log(text).events
    assert [(e.kind, e.cut) for e in events] == [("cut", "[597411.196475]  do_")]
    for check in (rule_xid(events, True), rule_sxid(events, True)):
        assert check.verdict == "unverified", check.actual
        assert "the log ends inside a line, cut short: '[597411.196475]  do_'" in check.actual
    # saved with a newline after it (a paste's, a page's), a frame cut before its `+0x../0x..`
    # is cut by its own shape all the same
    assert rule_xid(parse_kernel_log(text + "\n").events, True).verdict == "unverified"
    lines = text.splitlines(keepends=True)
    for cut in (
        "[597411.196473]  do_translation_fa",
        "[597411.196473]  do_translation_fault+0x7c",
        "[597411.196473]  do_translation_fault+0x7c/0x",
        "[597411.196310] p2pd invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP),",
    ):
        assert ends_unfinished(cut), cut
        assert rule_xid(parse_kernel_log("".join(lines[:-1]) + cut).events, True).verdict == "unverified"


@pytest.mark.parametrize(
    "stamp",
    [
        "[597411.196473]",  # a whole frame `do_translation_fault+0x7c/0xd8`
        "[597411.196380]",  # `Call trace:`
        "[597411.196378]",  # `Hardware name: netcup KVM Server, BIOS VPS 4000 ARM G11 08/25/2025`
        "[597411.196310]",  # `p2pd invoked oom-killer: ... oom_score_adj=0`
    ],
)
def test_a_whole_log_saved_without_its_last_newline_is_whole(stamp: str) -> None:
    """Round 30: the same real log cut after its whole line of `stamp` and saved without that
    line's newline (an editor's paste): the line ends like a whole kernel message (a frame's
    length, a number, a colon, a closing mark), so the log is read whole and gpu_xid passes."""
    lines = (REAL / RLSWARM).read_text().splitlines()
    kept = lines[: next(i for i, line in enumerate(lines) if line.startswith(stamp)) + 1]
    assert not ends_unfinished(kept[-1]), kept[-1]
    events = parse_kernel_log("\n".join(kept)).events
    assert events == ()
    assert rule_xid(events, True).verdict == "pass"


# (each line the review of round 30 found read as cut: a whole line's last token)
WHOLE_LAST_LINES = (
    "[  112.300000] ---[ end trace 0000000000000000 ]---",
    "[  112.300000] eth0: renamed from veth1ab23c4",
    "[  112.300000] 8021q: adding VLAN 0 to HW filter on device enp7s0",
    "[  112.300000]  sda: sda1 sda2 sda3",
    "[  112.300000]  nvme0n1: p1 p2",
    "[  112.300000] EXT4-fs (sda1): re-mounted. Opts: errors=remount-ro",
    "[  112.300000] igb 0000:01:00.0 eth0: NIC Link is Up 1000 Mbps Full Duplex, Flow Control: RX/TX",
    "[  112.300000] [  1234]     0  1234    12345      678   123456        0             0 shmem-rss:0kB",
    "[  112.300000] input: Power Button as /devices/LNXSYSTM:00/LNXPWRBN:00/input/input12",
    "[  112.300000] Linux version 5.15.0-78-generic (buildd@lcy02) (gcc 11.3.0) #78-Ubuntu",
    "[  112.300000] oom-kill:constraint=CONSTRAINT_NONE,task_memcg=/system.slice/docker-8b1e.scope",
)
BUMBLEBEE = "dmesg__xid-32-31__geforce-optimus__bumblebee.txt"


@pytest.mark.parametrize("last", WHOLE_LAST_LINES)
def test_a_whole_last_line_without_its_newline_keeps_the_xid_verdict(last: str) -> None:
    """Round 30 (LLL): the real bumblebee log (Xid 32 and 31 on a GeForce: gpu_xid warns) with
    one whole kernel line put after it in-test and saved without its newline (the shapes the
    review found: a trace's end marker, a renamed interface, a partition list, remount options,
    `RX/TX`, `shmem-rss:0kB`, `input12`, `#78-Ubuntu`, a `.scope`): each was read as a line cut
    short and the warn demoted to unverified; a complete last token is whole, the warn stays."""
    text = (REAL / BUMBLEBEE).read_text()
    assert rule_xid(parse_kernel_log(text).events, True).verdict == "warn"
    assert not ends_unfinished(last), last
    check = rule_xid(parse_kernel_log(text.rstrip("\n") + "\n" + last).events, True)
    assert check.verdict == "warn" and "cut short" not in check.actual, check.actual


@pytest.mark.parametrize(
    "last",
    [
        "[  112.300000] p2pd invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP),",
        "[  112.300000] oom-kill:constraint=",
        "[  112.300000] RIP: 0010:handle_mm_fault+0x",
        "[  112.300000]  do_page_fault+0x104/0x",
        "[  112.300000]  ? do_translation_fa",
        "[  112.300000] nvidia-peermem nv_get_p2p_free_call",
    ],
)
def test_the_shapes_of_a_cut_stay_cut(last: str) -> None:
    """The shapes only a cut leaves (a trailing `,` or `=`, a frame's `+0x` before its length's
    digits, a kernel function's name) stay cut without a newline: gpu_xid never keeps its warn."""
    text = (REAL / BUMBLEBEE).read_text()
    assert ends_unfinished(last), last
    assert rule_xid(parse_kernel_log(text.rstrip("\n") + "\n" + last).events, True).verdict == "unverified"


def test_a_log_cut_inside_another_drivers_line_says_a_line() -> None:
    """Round 30 (LLL): rlswarm463's log as found, ending inside `[597411.196475]  do_` (an OOM
    call trace's frame, no driver's line): gpu_xid's detail said it "ends inside a driver
    message"; it says "ends inside a line". (A driver line cut short still says "driver message":
    the bumblebee log cut in-test after the `,` of its last NVRM line's `Ch 00000003,`.)"""
    check = rule_xid(parse_kernel_log((REAL / RLSWARM).read_text()).events, True)
    assert check.detail.startswith("the kernel log given ends inside a line (cut short"), check.detail
    text = (REAL / BUMBLEBEE).read_text().rstrip("\n")
    nvrm = rule_xid(parse_kernel_log(text[: text.index("Ch 00000003,") + 12]).events, True)
    assert nvrm.verdict == "unverified" and "ends inside a driver message" in nvrm.detail, nvrm
