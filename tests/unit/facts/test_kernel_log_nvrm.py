"""GPU faults the driver logs without an Xid line (finding F6 of the 2026-12 truth audit):
"has fallen off the bus" (a dmesg message over three lines), "RmInitAdapter failed!",
"probe routine failed": read from real captures, judged by the gpu_xid rule (fail, naming the PCI
address), listed once where the log also has the Xid of the same fault."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuonboard.facts.kernel_log import load_nvrm_faults, parse_kernel_log
from gpuonboard.steps.checks.xid_catalogue import ROW_WARNINGS
from gpuonboard.steps.checks.xid_rules import FAILING, rule_xid

REAL = Path(__file__).parents[2] / "fixtures" / "real"
FALLEN = "dmesg__nvrm-fallen-off-bus-no-xid__driver570.158.01.txt"  # NVIDIA/NVSentinel #155
RMINIT = "dmesg-T__rminitadapter-failed-no-xid__titan-v.txt"  # illinois-scicomp #76
POST_RXDET = "dmesg__nvlink-post-rxdet-linkmask-failed-no-xid__gh100__gpud.txt"  # leptonai/gpud


def test_fallen_off_the_bus_over_three_dmesg_lines_is_one_event_naming_the_gpu() -> None:
    log = parse_kernel_log((REAL / FALLEN).read_text())
    assert log.lines == 5 and not log.xids()
    # "[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0" + two indented "NVRM:" continuation lines;
    # "[ 1843.439662] NVRM: The NVIDIA probe routine failed for 1 device(s)." (no address)
    assert [(e.kind, e.fault, e.pci, e.timestamp) for e in log.events] == [
        ("nvrm", "fallen_off_bus", "0000:b3:00.0", "[ 1843.308145]"),
        ("nvrm", "probe_failed", "", "[ 1843.439662]"),
    ]
    assert log.events[0].message == (
        "The NVIDIA GPU 0000:b3:00.0 (PCI ID: 10de:26b5) installed in this system has fallen off"
        " the bus and is not responding to commands."
    )
    check = rule_xid(log.events, True, "", [(0, "00000000:B3:00.0")], log.covers_boot)
    assert check.verdict == "fail"
    # (the probe failed for the 1 device that fell off the bus: that GPU's fault, listed once)
    assert (
        check.actual == "GPU 0 (0000:b3:00.0): driver message (no Xid): GPU has fallen off the bus -> reboot"
    )


def test_rminitadapter_failed_fails_naming_the_pci_address() -> None:
    log = parse_kernel_log((REAL / RMINIT).read_text())
    # two rounds of "RmInitAdapter failed! (0x25:0x40:1470)" + "rm_init_adapter failed, device minor
    # number 0": four sentences, two failures (x2: it said x4)
    assert [(e.fault, e.pci) for e in log.events] == [("rm_init_adapter_failed", "0000:81:00.0")] * 4
    check = rule_xid(log.events, True, "", [], log.covers_boot)
    assert (check.verdict, check.actual) == (
        "fail",
        "GPU at PCI 0000:81:00.0: driver message (no Xid): GPU failed to initialise (RmInitAdapter failed) x2"
        " -> replace",
    )
    assert "inspect and replace" in check.detail


def test_the_sentence_of_a_logged_xid_is_listed_once() -> None:
    # "NVRM: Xid (PCI:0000:02:00): 79, ... GPU has fallen off the bus." then
    # "NVRM: GPU 0000:02:00.0: GPU has fallen off the bus.": one fault, the Xid's
    log = parse_kernel_log((REAL / "dmesg-T__xid-79-unknown-pid__titan-v.txt").read_text())
    assert [(e.kind, e.fault) for e in log.nvrm_faults()] == [("nvrm", "fallen_off_bus")]
    check = rule_xid(log.events, True, "", [(0, "00000000:02:00.0")], log.covers_boot)
    assert (check.verdict, check.actual) == (
        "fail",
        "GPU 0 (0000:02:00): Xid 79 GPU has fallen off the bus -> reboot",
    )


@pytest.mark.parametrize(
    ("line", "fault", "pci"),
    [
        # journalctl -k prefixes every line; a GSP start-up failure and its summary line
        (
            "Oct 02 10:41:07 host kernel: NVRM: GPU0 RmInitAdapter: Cannot initialize GSP firmware RM",
            "gsp_init_failed",
            "",
        ),
        (
            "[  921.623] NVRM: GPU 0000:04:00.0: RmInitAdapter failed! (0x62:0x40:2192)",
            "rm_init_adapter_failed",
            "0000:04:00.0",
        ),
        ("[   12.3] NVRM: _kgspLogXid119: ******** GSP Timeout ********", "gsp_timeout", ""),
    ],
)
def test_other_fault_sentences(line: str, fault: str, pci: str) -> None:
    (event,) = parse_kernel_log(line).events
    assert (event.kind, event.fault, event.pci) == ("nvrm", fault, pci)


def test_ordinary_driver_lines_are_no_fault() -> None:
    text = (
        "[    5.1] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  570.158.01  Release Build\n"
        "[    5.2] NVRM: GPU 0000:02:00.0: GPU serial number is 0322518029277.\n"
    )
    # (the driver prints "GPU at PCI:..." and "GPU Board Serial Number" right before an Xid
    # line: a log ending on those is cut before its Xid, tests/unit/facts/test_kernel_log_cut_r10.py)
    log = parse_kernel_log(text)
    assert log.events == () and log.lines == 2
    assert rule_xid(log.events, True).verdict == "pass"


def test_every_fault_row_fails_the_box() -> None:
    rows = load_nvrm_faults()
    assert {r.id for r in rows} >= {
        "fallen_off_bus",
        "rm_init_adapter_failed",
        "probe_failed",
        "gsp_init_failed",
    }
    # (but the Jetson driver's rows, whose application faults and own errors warn: measure39c 19, 20)
    assert all(r.action in FAILING for r in rows if not r.id.startswith("nvgpu_"))
    assert all(r.action in (*FAILING, *ROW_WARNINGS) for r in rows)


def test_nvlink_discovery_failure_without_an_xid_fails_the_box() -> None:
    """leptonai/gpud's H100 incident (six `NVRM: knvlink...PostRxDet...` lines, every 4 s at 76 days
    of uptime, no Xid line): the driver could not read which NVLinks passed receiver detection, so
    the GPU's links to its peer are not discovered. It passed "no Xid in the kernel log"."""
    log = parse_kernel_log((REAL / POST_RXDET).read_text())
    assert not log.xids() and not log.unread()
    assert [e.fault for e in log.events] == ["nvlink_post_rxdet_failed"] * 6
    check = rule_xid(log.events, True, "", [], log.covers_boot)
    assert check.verdict == "fail"
    assert "NVLink discovery failed" in check.actual and check.actual.endswith("-> reboot")


def test_ordinary_nvlink_driver_lines_are_no_fault() -> None:
    # the same driver's lines of a working NVLink (gpud's negative case) and its load banner
    text = (
        "[    6.1] NVRM: NVLink link training completed\n"
        "[    6.2] nvidia-nvlink: Nvlink Core is being initialized, major device number 235\n"
    )
    assert parse_kernel_log(text).events == ()


def _own_records(lines: list[str], stamps: list[str]) -> str:
    """The lines, each with a stamp of its own (as dmesg or journalctl prints a driver's lines
    that are records of their own, not one record's continuation lines)."""
    return "".join(f"{stamp} {line}".lstrip() + "\n" for stamp, line in zip(stamps, lines, strict=True))


@pytest.mark.parametrize(
    "stamps",
    [
        ["[ 1843.308145]", "[ 1843.308150]", "[ 1843.308152]"],  # dmesg
        ["Feb 14 05:05:12 gpu-1 kernel:"] * 2 + ["Feb 14 05:05:13 gpu-1 kernel:"],  # journalctl -k
        [
            f"2026-02-14T05:05:12.{us} gpu-1 kernel:" for us in ("308145", "308150", "308152")
        ],  # short-iso-precise
    ],
)
def test_fallen_off_the_bus_in_three_records_names_its_gpu(stamps: list[str]) -> None:
    """leptonai/gpud's B200 (10de:2901) capture: a newer driver prints "The NVIDIA GPU
    0000:18:00.0" / "(PCI ID: ...) installed in this system has" / "fallen off the bus ..." as
    three kernel records, not one record's continuation lines. Edit: each line given a stamp of
    its own (dmesg's, journalctl -k's to the second, an ISO one to the microsecond). The address
    was lost (the lines were not joined): the fault was "a GPU (no PCI address)", so on a slice it
    failed the rental for another tenant's GPU; it now names 0000:18:00.0 and warns there."""
    kmsg = (REAL / "dmesg-kmsg__b200-fallen-off-bus-three-records-no-xid__gpud.txt").read_text()
    log = parse_kernel_log(_own_records(kmsg.splitlines(), stamps))
    assert [(e.fault, e.pci) for e in log.events] == [("fallen_off_bus", "0000:18:00.0")]
    assert log.events[0].message.startswith("The NVIDIA GPU 0000:18:00.0 (PCI ID: 10de:2901) installed")
    check = rule_xid(log.events, True, "", [(0, "00000000:19:00.0")], True, slice_="a container")
    assert check.verdict == "warn"
    assert check.actual.startswith("GPU at PCI 0000:18:00.0 (a GPU this rental does not show)")


def test_a_refusal_in_two_records_explains_the_failures_it_causes() -> None:
    """The RTX 5090 laptop's first boot (its first four lines) with the refusal's continuation
    line `NVRM: installed in this system requires use of the NVIDIA open kernel modules.` given a
    stamp of its own, `[    5.559843]` (a record of its own). The refusal lost its address, so
    the RmInitAdapter failure it causes read as a GPU to replace (a false hardware claim)."""
    lines = (
        REAL / "dmesg-grep-nvrm__requires-open-kernel-modules__rtx5090-laptop__driver580.105.08.txt"
    ).read_text()
    head = lines.splitlines()[:5]
    head[2] = "[    5.559843] " + head[2].strip()
    log = parse_kernel_log("\n".join(head) + "\n")
    check = rule_xid(log.events, True, "", [], log.covers_boot)
    assert check.actual == (
        "GPU at PCI 0000:02:00.0: driver message (no Xid): the installed driver does not support"
        " this GPU -> install_driver"
    )
    assert "replace" not in check.actual


def test_a_finished_sentence_ends_the_driver_message_about_a_gpu() -> None:
    # the next record after a whole sentence is a message of its own (its fault is its own)
    text = (
        "[    5.1] NVRM: The NVIDIA GPU 0000:02:00.0 (PCI ID: 10de:2c58)\n"
        "[    5.2] NVRM: installed in this system requires use of the NVIDIA open kernel modules.\n"
        "[    5.3] NVRM: GPU 0000:03:00.0: RmInitAdapter failed! (0x22:0x56:884)\n"
    )
    faults = [(e.fault, e.pci) for e in parse_kernel_log(text).events]
    assert faults == [("driver_refuses_gpu", "0000:02:00.0"), ("rm_init_adapter_failed", "0000:03:00.0")]


def _without_stamps(text: str) -> str:
    """The log as `dmesg -t` (or `journalctl -o cat`) prints it: no stamp, no continuation indent."""
    lines = (re.sub(r"^(?:\[[^\]]*\]|\s+)\s*", "", line) for line in text.splitlines() if line.strip())
    return "".join(f"{line}\n" for line in lines)


@pytest.mark.parametrize(
    ("name", "actual"),
    [
        (
            RMINIT,
            "GPU at PCI 0000:81:00.0: driver message (no Xid): GPU failed to initialise (RmInitAdapter"
            " failed) x2 -> replace",
        ),
        (
            "dmesg-grep-nvrm__requires-open-kernel-modules__rtx5090-laptop__driver580.105.08.txt",
            "GPU at PCI 0000:02:00.0: driver message (no Xid): the installed driver does not support this"
            " GPU x17 -> install_driver",
        ),
    ],
)
def test_a_log_without_stamps_keeps_each_driver_message_apart(name: str, actual: str) -> None:
    """Edit: the real captures with their stamps and continuation indents removed, as `dmesg -t` or
    `journalctl -o cat` prints them. Every NVRM line was read as the one before's continuation
    (an unstamped line read as dmesg's indented one): the whole log one message, its first fault
    row and first address only (the Titan V's two failures read as one, the RTX 5090's 17 boots'
    refusals as one; a fault of another GPU after a refusal was not listed at all)."""
    log = parse_kernel_log(_without_stamps((REAL / name).read_text()))
    check = rule_xid(log.events, True, "", [], None)
    assert (check.verdict, check.actual) == ("fail", actual)


def test_a_log_without_stamps_lists_each_gpus_fault() -> None:
    # (unstamped lines of three messages about three GPUs, the RTX 5090 capture's sentences: the
    # refusal was the only fault read, named on the first GPU's address)
    text = (
        "NVRM: GPU 0000:02:00.0: RmInitAdapter failed! (0x22:0x56:884)\n"
        "NVRM: GPU 0000:03:00.0: RmInitAdapter failed! (0x22:0x56:884)\n"
        "NVRM: The NVIDIA GPU 0000:04:00.0 (PCI ID: 10de:2c58)\n"
        "NVRM: installed in this system requires use of the NVIDIA open kernel modules.\n"
    )
    assert [(e.fault, e.pci) for e in parse_kernel_log(text).events] == [
        ("rm_init_adapter_failed", "0000:02:00.0"),
        ("rm_init_adapter_failed", "0000:03:00.0"),
        ("driver_refuses_gpu", "0000:04:00.0"),
    ]


@pytest.mark.parametrize(
    "stamps",
    [
        ["", ""],  # as gpud's kmsg reader gave it (no stamp)
        ["Feb 14 05:05:12 gpu-1 kernel:"] * 2,  # journalctl -k
        ["[    5.1]", "[    5.2]"],  # dmesg, a stamp without microseconds
    ],
)
def test_a_log_cut_inside_the_driver_message_about_a_gpu_is_unread(stamps: list[str]) -> None:
    """Edit: gpud's B200 capture cut after its second line (`(PCI ID: 10de:2901) installed in
    this system has`, then nothing; each line with the stamp given, as its own record). The
    driver ends that message with a sentence; the log read as no fault at all and gpu_xid passed
    "no Xid"; what the message went on to say is not known: unread, the log cut short."""
    kmsg = (REAL / "dmesg-kmsg__b200-fallen-off-bus-three-records-no-xid__gpud.txt").read_text()
    log = parse_kernel_log(_own_records(kmsg.splitlines()[:2], stamps))
    (event,) = log.events
    assert (event.kind, event.pci, bool(event.cut)) == ("xid_unread", "0000:18:00.0", True)
    check = rule_xid(log.events, True, "", [], True)
    assert check.verdict == "unverified" and "a driver message the log ends inside" in check.actual


def test_a_gpu_lost_from_the_bus_without_an_xid_fails_the_box() -> None:
    """openwall/john #5835's dmesg (a GPU gone from the system mid-run): the driver's status
    NV_ERR_GPU_IS_LOST, printed by its check helper, and no Xid line; then two lines of
    NVIDIA/open-gpu-kernel-modules #688 (a DGX Station A100's `journalctl`) of the same status
    from the assertion helper. Both passed "no Xid in the kernel log"."""
    log = parse_kernel_log(
        (REAL / "dmesg__nv-err-gpu-is-lost-no-xid__rpc-send-failed__john-5835.txt").read_text()
    )
    # (its `rpcSendMessage failed with status 0x0000000f` lines say the same status by number)
    assert [e.fault for e in log.events] == ["gpu_lost"] * 8
    check = rule_xid(log.events, True, "", [], True)
    assert (check.verdict, check.actual) == (
        "fail",
        "a GPU (no PCI address in the message): driver message (no Xid): GPU lost from the bus"
        " (NV_ERR_GPU_IS_LOST) x4 -> reboot",
    )
    journal = (
        "Feb 17 08:02:35 abggdna-DGX-Station-A100 kernel: NVRM: _issueRpcAndWait: rpcSendMessage"
        " failed with status 0x0000000f for fn 76!\n"
        "Feb 17 08:02:35 abggdna-DGX-Station-A100 kernel: NVRM: nvAssertOkFailedNoLog: Assertion"
        " failed: GPU lost from the bus [NV_ERR_GPU_IS_LOST] (0x0000000F) returned from rmStatus @"
        " kernel_ce_gv100.c:106\n"
    )
    assert [e.fault for e in parse_kernel_log(journal).events] == ["gpu_lost"] * 2


# the Grace (GH200, GB200) driver's message when the GPU's memory cannot be onlined: its format
# (NVIDIA/open-gpu-kernel-modules kernel-open/nvidia/os-interface.c, one nv_printf over four
# lines, no final stop) with a GH200's values filled in
ONLINING = [
    "NVRM: Failing GPU memory onlining as the onlining zone is not movable."
    " pa: 0x400000000000 size: 0x8000000",
    "NVRM: The NVIDIA GPU 0009:01:00.0 installed in the system",
    "NVRM: requires auto onlining mode online_movable enabled in",
    "NVRM: /sys/devices/system/memory/auto_online_blocks",
]
ONLINING_STAMPS = [
    ["[  312.508110]"] + ["              "] * 3,  # dmesg: one printk, its lines indented
    [f"[  312.50811{i}]" for i in range(4)],  # dmesg: each line a record of its own
    ["Feb 14 05:05:12 gh200-1 kernel:"] * 4,  # journalctl -k
]


@pytest.mark.parametrize("stamps", ONLINING_STAMPS)
def test_the_grace_memory_onlining_message_ends_whole_without_a_stop(stamps: list[str]) -> None:
    """The driver's memory onlining message (ONLINING, each line with the stamp given) as the
    log's last: it ends with no stop by design. Read as the driver's message about a GPU cut
    short, it made gpu_xid unverified ("the log ends inside it"): it is whole, no fault."""
    log = parse_kernel_log(_own_records(ONLINING, stamps))
    assert log.events == ()
    assert rule_xid(log.events, True, "", [], True).verdict == "pass"


@pytest.mark.parametrize("stamps", ONLINING_STAMPS)
def test_a_driver_line_after_the_onlining_message_is_a_message_of_its_own(stamps: list[str]) -> None:
    """ONLINING (stamps given) then illinois-scicomp #76's RmInitAdapter failure of another GPU
    (its first line, its stamp replaced by the log's), scitix/sichek #51's NV_ERR_RESET_REQUIRED
    line (its stamp replaced) and the Titan V's Xid 79 preamble (its first line). The rule that
    joins the driver's lines about one GPU joined the next driver line whatever it said: the
    failure was said of 0009:01:00.0 (the wrong GPU), the reset lost, the preamble swallowed."""
    rminit = (REAL / RMINIT).read_text().splitlines()[0].split("] ", 1)[1]
    reset = (REAL / "dmesg-T__nv-err-reset-required-no-xid__gsp.txt").read_text().splitlines()[1]
    preamble = (REAL / "dmesg-T__xid-79-unknown-pid__titan-v.txt").read_text().splitlines()[0]
    after = [rminit, reset.split("] ", 1)[1].strip(), preamble.split("] ", 1)[1]]
    journal = stamps[0].endswith("kernel:")
    more = [stamps[0] if journal else f"[  312.50812{i}]" for i in range(3)]  # (records of their own)
    log = parse_kernel_log(_own_records(ONLINING + after, stamps + more))
    assert [(e.kind, e.fault, e.pci) for e in log.events] == [
        ("nvrm", "rm_init_adapter_failed", "0000:81:00.0"),
        ("nvrm", "reset_required", ""),
        ("xid_unread", None, "0000:02:00"),
    ]


# a line of another driver's from the same kind of log (the H100 HGX's kern.log capture)
OTHER_DRIVER = "nvidia_uvm: module uses symbols from proprietary module nvidia, inheriting taint."


@pytest.mark.parametrize("at", [1, 2])
def test_another_drivers_line_between_the_records_about_a_gpu_keeps_its_address(at: int) -> None:
    """gpud's B200 three-record capture (journalctl -k stamps) with another driver's line
    (OTHER_DRIVER) put between its records. It ended the message: the fault lost its GPU's
    address ("a GPU (no PCI address)"); only the driver's own lines go on with it."""
    kmsg = (REAL / "dmesg-kmsg__b200-fallen-off-bus-three-records-no-xid__gpud.txt").read_text()
    lines = kmsg.splitlines()
    lines.insert(at, OTHER_DRIVER)
    log = parse_kernel_log(_own_records(lines, ["Feb 14 05:05:12 gpu-1 kernel:"] * 4))
    assert [(e.fault, e.pci) for e in log.events] == [("fallen_off_bus", "0000:18:00.0")]


@pytest.mark.parametrize("cut", [1, 2])
def test_a_log_ending_after_another_drivers_line_inside_the_records_about_a_gpu_is_unread(cut: int) -> None:
    """gpud's B200 capture cut after its first or second record, then OTHER_DRIVER as the log's
    last line (journalctl -k stamps). gpu_xid passed "no Xid": the driver's message was never
    finished, what it said of the GPU is not known."""
    kmsg = (REAL / "dmesg-kmsg__b200-fallen-off-bus-three-records-no-xid__gpud.txt").read_text()
    lines = kmsg.splitlines()[:cut] + [OTHER_DRIVER]
    log = parse_kernel_log(_own_records(lines, ["Feb 14 05:05:12 gpu-1 kernel:"] * (cut + 1)))
    (event,) = log.events
    assert (event.kind, event.pci, bool(event.cut)) == ("xid_unread", "0000:18:00.0", True)
    assert rule_xid(log.events, True, "", [], True).verdict == "unverified"


def _xid_79_then_gpu_lost() -> str:
    """The Titan V's Xid 79 (dmesg -T, 0000:02:00) then openwall/john #5835's first two lines
    (`rpcSendMessage failed ...`, `Check failed: GPU lost from the bus [NV_ERR_GPU_IS_LOST]`), their
    stamps replaced by the Titan V's last (one log, one clock)."""
    xid = (REAL / "dmesg-T__xid-79-unknown-pid__titan-v.txt").read_text()
    stamp = xid.splitlines()[-1].split("] ", 1)[0] + "]"
    lost = (REAL / "dmesg__nv-err-gpu-is-lost-no-xid__rpc-send-failed__john-5835.txt").read_text()
    return xid + "".join(f"{stamp} {line.split('] ', 1)[1]}\n" for line in lost.splitlines()[:2])


def test_a_gpu_lost_beside_its_xid_79_is_listed_once() -> None:
    """_xid_79_then_gpu_lost: the driver's NV_ERR_GPU_IS_LOST lines name no GPU, so the row's
    `same_as_xid: 79` never matched: the fault was listed twice ("Xid 79; a GPU (no PCI
    address): GPU lost from the bus -> reboot")."""
    log = parse_kernel_log(_xid_79_then_gpu_lost())
    check = rule_xid(log.events, True, "", [], True)
    assert (check.verdict, check.actual) == (
        "fail",
        "GPU at PCI 0000:02:00: Xid 79 GPU has fallen off the bus -> reboot",
    )


def test_a_gpu_lost_beside_another_tenants_xid_79_fails_a_rented_share() -> None:
    """_xid_79_then_gpu_lost on a container whose one GPU is 00000000:19:00.0: the Xid 79 is on a
    GPU this rental does not show (a warning); the address-less NV_ERR_GPU_IS_LOST lines may be
    the rental's own GPU lost. They were taken for that Xid's text and hidden: the row warned of
    another tenant's GPU only. An Xid on a GPU the slice does not show says no fault of its own:
    the lines naming no GPU are the box's own fault again (fail), the Xid named apart."""
    log = parse_kernel_log(_xid_79_then_gpu_lost())
    check = rule_xid(log.events, True, "", [(0, "00000000:19:00.0")], True, slice_="a container")
    assert check.verdict == "fail"
    assert check.actual == (
        "a GPU (no PCI address in the message): driver message (no Xid): GPU lost from the bus"
        " (NV_ERR_GPU_IS_LOST) -> reboot; also GPU at PCI 0000:02:00 (a GPU this rental does not"
        " show): Xid 79 GPU has fallen off the bus -> reboot"
    )


def test_a_gpu_lost_beside_the_rentals_own_xid_79_is_listed_once() -> None:
    """_xid_79_then_gpu_lost on a container whose one GPU is the Xid's 00000000:02:00.0: one
    fault of the rental's GPU, the Xid's."""
    log = parse_kernel_log(_xid_79_then_gpu_lost())
    check = rule_xid(log.events, True, "", [(0, "00000000:02:00.0")], True, slice_="a container")
    assert (check.verdict, check.actual) == (
        "fail",
        "GPU 0 (0000:02:00): Xid 79 GPU has fallen off the bus -> reboot",
    )


# the real Xid 79 line of the NVSwitch box's dmesg (its stamp dropped: _own_records gives one)
XID_79_ELSEWHERE = (
    (REAL / "dmesg__xid-79-sxid-20034__nvswitch.txt").read_text().splitlines()[2].split("] ", 1)[1]
)


@pytest.mark.parametrize("at", [1, 2])
def test_an_xid_line_between_the_records_about_a_gpu_keeps_its_address(at: int) -> None:
    """gpud's B200 three-record capture (dmesg stamps) with the NVSwitch box's real Xid 79 line
    on 0000:91:00 put between its records (at 1, at 2). The Xid line ended the message: the
    fallen-off-the-bus sentence lost its GPU's address ("a GPU (no PCI address)") and, beside
    that Xid 79, was taken for its text: on a slice whose GPU is 0000:18:00.0 the rental's own
    fault was hidden (a warning of another tenant's GPU). The Xid is a line of its own; the
    message goes on after it."""
    kmsg = (REAL / "dmesg-kmsg__b200-fallen-off-bus-three-records-no-xid__gpud.txt").read_text()
    lines = kmsg.splitlines()
    lines.insert(at, XID_79_ELSEWHERE)
    log = parse_kernel_log(_own_records(lines, [f"[ 1843.30814{i}]" for i in range(4)]))
    assert sorted((e.kind, e.pci) for e in log.events) == [("nvrm", "0000:18:00.0"), ("xid", "0000:91:00")]
    check = rule_xid(log.events, True, "", [(0, "00000000:18:00.0")], True, slice_="a container")
    assert check.verdict == "fail"
    assert check.actual.startswith(
        "GPU 0 (0000:18:00.0): driver message (no Xid): GPU has fallen off the bus"
    )


# NVIDIA/open-gpu-kernel-modules #789 (an RTX 3090, 550.144.03): `RmInitAdapter: Cannot initialize
# GSP firmware RM` then `GPU 0000:98:00.0: RmInitAdapter failed! (0x62:0x65:1792)`; #1058 (an
# RTX 3080 laptop GPU): the same two lines, the first prefixed by the driver's instance `GPU0`
GSP_789 = "dmesg__rminitadapter-cannot-initialize-gsp-no-pci__rtx3090__driver550.txt"
GSP_1058 = "dmesg__gpu0-cannot-initialize-gsp-wpr2-up__rtx3080-laptop__gh100.txt"


# (#1058's driver says why before it: `_kgspBootGspRm: (the GPU is likely in a bad state and may
# need to be reset)`: the failure asks for that reset, round 35; #789's names no cause)
_BAD_STATE = (
    "; the driver's line beside it: the GPU was left in a state the driver cannot boot its GSP firmware from"
    " (`unexpected WPR2 already up, cannot proceed with booting GSP`; `the GPU is likely in a bad state and"
    " may need to be reset`): a GPU reset clears it"
)


@pytest.mark.parametrize(
    ("name", "pci", "said"),
    [(GSP_789, "0000:98:00.0", " -> replace"), (GSP_1058, "0000:01:00.0", f"{_BAD_STATE} -> reset_gpu")],
)
def test_a_gsp_start_failure_is_the_gpu_failure_that_names_its_gpu(name: str, pci: str, said: str) -> None:
    """The driver prints `RmInitAdapter: Cannot initialize GSP firmware RM` (no address) inside
    RmInitAdapter, then that call's `GPU <address>: RmInitAdapter failed!`: one failure of the
    GPU the second line names. It was listed as a second fault on "a GPU (no PCI address in the
    message)" (and, on a slice, failed the rental for another tenant's GPU)."""
    log = parse_kernel_log((REAL / name).read_text())
    assert {e.fault for e in log.events} - {"gpu_bad_state_reset"} == {
        "gsp_init_failed",
        "rm_init_adapter_failed",
    }
    check = rule_xid(log.events, True, "", [], log.covers_boot)
    assert (check.verdict, check.actual) == (
        "fail",
        f"GPU at PCI {pci}: driver message (no Xid): GPU failed to initialise (RmInitAdapter failed){said}",
    )


def test_a_probe_failure_counting_more_gpus_than_the_log_names_stays_a_fault() -> None:
    """NVIDIA/NVSentinel #155 with its summary edited to `failed for 2 device(s)`: one GPU fell
    off the bus, the probe of another GPU the log does not name failed too: that one is listed."""
    text = (REAL / FALLEN).read_text().replace("for 1 device(s)", "for 2 device(s)")
    log = parse_kernel_log(text)
    check = rule_xid(log.events, True, "", [(0, "00000000:B3:00.0")], log.covers_boot)
    assert check.actual == (
        "GPU 0 (0000:b3:00.0): driver message (no Xid): GPU has fallen off the bus -> reboot;"
        " a GPU (no PCI address in the message): driver message (no Xid): the driver failed to"
        " probe a GPU -> reboot"
    )


# NVIDIA/open-gpu-kernel-modules #116 (515.43.04): the resource manager's lines of the open kernel
# modules before R535 carry `NVRM ` and their function, no colon after NVRM
NO_COLON = "dmesg__nvrm-tag-without-colon-gsp-init-failed__rtx2060__open515.43.04.txt"


def test_the_open_modules_nvrm_tag_without_its_colon_is_the_drivers() -> None:
    """`NVRM RmInitAdapter: Cannot initialize GSP firmware RM` was no driver line (only `NVRM:`
    was read): the log cut after it (its first 2 lines, in-test) passed "no Xid in the kernel
    log". Read whole, the GSP failure is the RmInitAdapter failure's cause (listed once)."""
    text = (REAL / NO_COLON).read_text()
    cut = "".join(text.splitlines(keepends=True)[:2])
    log = parse_kernel_log(cut)
    assert [(e.fault, e.pci) for e in log.events] == [("gsp_init_failed", "")]
    check = rule_xid(log.events, True, "", [(0, "00000000:01:00.0")], None)
    assert check.verdict == "fail" and "GSP firmware failed to start" in check.actual
    whole = parse_kernel_log(text)
    # (the GSP line is of the GPU the RmInitAdapter line right after it names)
    assert [(e.fault, e.pci) for e in whole.events] == [
        ("gsp_init_failed", "0000:01:00.0"),
        ("rm_init_adapter_failed", "0000:01:00.0"),
        ("rm_init_adapter_failed", "0000:01:00.0"),
    ]
    check = rule_xid(whole.events, True, "", [(0, "00000000:01:00.0")], None)
    assert (check.verdict, check.actual) == (
        "fail",
        "GPU 0 (0000:01:00.0): driver message (no Xid): GPU failed to initialise (RmInitAdapter failed)"
        " -> replace",
    )


def test_the_drivers_gpu_lost_status_by_its_number_alone_fails_the_box() -> None:
    """ninfer #12: a journal whose driver lines say the GPU was lost only by the status number
    its RPCs to the GSP failed with (`rpcSendMessage failed with status 0x0000000f`, `GspRmFree
    failed: ...; status=0x0000000f`: NV_ERR_GPU_IS_LOST), no Xid: it passed "no Xid in the kernel
    log"."""
    text = (
        REAL / "dmesg-journalctl-short-precise__rpc-status-0xf-gpu-lost-no-name__ninfer-12.txt"
    ).read_text()
    log = parse_kernel_log(text)
    assert {e.fault for e in log.events} == {"gpu_lost"} and len(log.events) == 4
    check = rule_xid(log.events, True, "", [(0, "00000000:01:00.0")], None)
    assert (check.verdict, check.actual) == (
        "fail",
        "a GPU (no PCI address in the message): driver message (no Xid): GPU lost from the bus"
        " (NV_ERR_GPU_IS_LOST) x2 -> reboot",
    )


@pytest.mark.parametrize(
    "line",
    [
        "NVRM: GPU0 rpcRmApiFree_GSP: GspRmFree failed: hClient=0xc1d00018; hObject=0x5c000052;"
        " paramsStatus=0x00000000; status=0x00000000",
        "NVRM: GPU0 _issueRpcAndWait: rpcSendMessage failed with status 0x00000065 for fn 10 sequence 790!",
        "NVRM: GPU 0000:a1:00.0: RmInitAdapter failed! (0x62:0x40:2168)",
    ],
)
def test_another_status_number_is_no_gpu_lost(line: str) -> None:
    """Only NV_ERR_GPU_IS_LOST's number (0x0000000f) after `status` is a GPU lost; RmInitAdapter's
    own code `(0x62:...)` is no NV_ERR_RESET_REQUIRED status."""
    faults = {e.fault for e in parse_kernel_log(f"[   22.275339] {line}\n").events}
    assert not faults & {"gpu_lost", "reset_required"}


# dylanaraps/neofetch #876: `cat /proc/driver/nvidia/version`'s first line, as posted
NVRM_VERSION = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  384.98  Thu Oct 26 15:16:01 PDT 2017"
# an Ubuntu forum's `journalctl` of two boots (no NVIDIA driver fault): gpu_xid passes it
TWO_BOOTS = "dmesg-journalctl__two-boots-reboot-separator__ubuntu-20.04-forum.txt"


def test_the_drivers_version_file_pasted_after_a_log_is_no_driver_line() -> None:
    """The two-boots journal with neofetch #876's `NVRM version: ...` line appended in-test, no
    final newline (a user's `cat /proc/driver/nvidia/version` pasted below the log): it was read
    as a driver message the log ends inside, "1 Xid line this tool cannot read (first: 'NVRM:
    version: ...')" (a colon the line never had), unverified; it is no line of the log: pass."""
    text = (REAL / TWO_BOOTS).read_text().rstrip("\n") + "\n" + NVRM_VERSION
    log = parse_kernel_log(text)
    assert [e for e in log.events if e.kind in ("nvrm", "xid_unread")] == []
    check = rule_xid(log.events, True, "", [], log.covers_boot)
    assert (check.verdict, check.actual) == ("pass", "no Xid in the kernel log")


def test_a_driver_line_the_log_ends_inside_is_quoted_as_printed() -> None:
    """NVIDIA/open-gpu-kernel-modules #116's first line (R515's `NVRM kgspInitRm_IMPL: ...`, no
    colon after NVRM) cut in-test after its function's colon, the log's last line: the unread
    line was quoted `NVRM: kgspInitRm_IMPL:`, a colon the driver never printed; as printed now."""
    first = (REAL / "dmesg__nvrm-tag-without-colon-gsp-init-failed__rtx2060__open515.43.04.txt").read_text()
    cut = first.splitlines()[0].split(" missing")[0]
    assert cut == "[    3.596579] NVRM kgspInitRm_IMPL:"
    check = rule_xid(parse_kernel_log(cut).events, True, "", [], None)
    assert check.verdict == "unverified"
    assert "'NVRM kgspInitRm_IMPL:'" in check.actual and "NVRM: kgspInitRm_IMPL" not in check.actual


# NVIDIA/NVSentinel #155's load banner and `fallen off the bus` lines, and the Rockchip RTX 3090's
# (tests/fixtures/real/dmesg-H__rtx3090-aarch64-rockchip__...) BAR, probe and summary lines
ROCKCHIP = "dmesg-H__rtx3090-aarch64-rockchip__bar-invalid-fallen-off-bus-no-xid.txt"


def _body(line: str) -> str:
    return line.split("] ", 1)[1]


def reload_after_a_fall(probe_line: bool = True) -> str:
    """A log edited from the two real captures: the driver loads (`[5.2]`, #155's banner), GPU
    0000:b3:00.0 falls off the bus while it runs (`[1000.3]`, #155's three lines), and a reload
    at `[2000.1]` fails to probe another GPU, 0000:3b:00.0 (the Rockchip log's
    `nvidia: probe of ... failed with error -1` and summary lines, the address 0002:21:00.0
    changed to 0000:3b:00.0), before the reload's banner. `probe_line`: False leaves the
    `nvidia: probe of` line out. (The Rockchip log's BAR lines, a fault of their own since
    measure34d 16, data/nvrm_faults.yml bar_invalid, are left out: the probe failure is what
    these tests read.)"""
    fallen = (REAL / FALLEN).read_text().splitlines()
    rockchip = [line.replace("0002:21", "0000:3b") for line in (REAL / ROCKCHIP).read_text().splitlines()]
    banner = _body(fallen[4])
    lines = [
        f"[    5.200000] {banner}",
        f"[ 1000.300000] {_body(fallen[0])}",
        *fallen[1:3],
        *([f"[ 2000.100100] {_body(rockchip[22])}"] if probe_line else []),
        f"[ 2000.100200] {_body(rockchip[23])}",
        f"[ 2000.200000] {banner}",
    ]
    return "\n".join(lines) + "\n"


def test_a_probe_failure_of_another_gpu_is_not_explained_by_an_earlier_fall() -> None:
    """The probe the reload failed is of 0000:3b:00.0 (the kernel's `probe of` line names it),
    not of 0000:b3:00.0, which fell off the bus 1000 s before: both are listed. The probe failure
    was taken for b3's fall (`explains`), and 3b's fault was dropped."""
    log = parse_kernel_log(reload_after_a_fall())
    check = rule_xid(log.events, True, "", [], log.covers_boot)
    assert (check.verdict, check.actual) == (
        "fail",
        "GPU at PCI 0000:b3:00.0: driver message (no Xid): GPU has fallen off the bus -> reboot;"
        " GPU at PCI 0000:3b:00.0: driver message (no Xid): the driver failed to probe a GPU -> reboot",
    )


@pytest.mark.parametrize(
    "line",
    [
        "[ 2000.100100] nvidia: probe of 0000:3b:00.0 failed with error -1",
        "[ 2000.100100] nvidia 0000:3b:00.0: probe with driver nvidia failed with error -1",
    ],
)
def test_the_kernels_probe_line_names_the_gpu_of_the_probe_summary(line: str) -> None:
    """The Rockchip log's `nvidia: probe of` line (address changed to 0000:3b:00.0), and the
    same line as Linux 5.x's driver core prints it (`probe with driver nvidia failed`), before
    the summary: the summary is that GPU's."""
    text = reload_after_a_fall(probe_line=False).replace("[ 2000.100200]", f"{line}\n[ 2000.100200]")
    events = parse_kernel_log(text).events
    assert [(e.fault, e.pci) for e in events] == [
        ("fallen_off_bus", "0000:b3:00.0"),
        ("probe_failed", "0000:3b:00.0"),
    ]


def test_a_probe_summary_is_explained_only_by_a_cause_of_its_own_probe_pass() -> None:
    """NVIDIA/NVSentinel #155 (b3 falls off the bus, then `probe routine failed for 1
    device(s)`), its two fault lines repeated 1000 s later without the `fallen off` sentence: the
    second probe pass's failure names no GPU and no fall of its own pass explains it."""
    fallen = (REAL / FALLEN).read_text().splitlines()
    text = "\n".join([*fallen[:4], f"[ 2843.439662] {_body(fallen[3])}"]) + "\n"
    check = rule_xid(parse_kernel_log(text).events, True, "", [], True)
    assert check.actual == (
        "GPU at PCI 0000:b3:00.0: driver message (no Xid): GPU has fallen off the bus -> reboot;"
        " a GPU (no PCI address in the message): driver message (no Xid): the driver failed to"
        " probe a GPU -> reboot"
    )


def test_a_second_gsp_start_failure_naming_no_gpu_is_not_the_first_ones_gpu() -> None:
    """NVIDIA/open-gpu-kernel-modules #789 (`RmInitAdapter: Cannot initialize GSP firmware RM`,
    then `GPU 0000:98:00.0: RmInitAdapter failed!`), with its first line repeated at `[1500.0]`
    after its last one, no line naming a GPU after it: that one may be another GPU, and stays a
    fault of its own (it was taken for 98's)."""
    gsp = (REAL / GSP_789).read_text().splitlines()
    text = "\n".join([*gsp, f"[ 1500.000000] {_body(gsp[0])}"]) + "\n"
    log = parse_kernel_log(text)
    assert [(e.fault, e.pci) for e in log.events if e.fault == "gsp_init_failed"] == [
        ("gsp_init_failed", "0000:98:00.0"),
        ("gsp_init_failed", ""),
    ]
    check = rule_xid(log.events, True, "", [], log.covers_boot)
    assert check.actual == (
        "GPU at PCI 0000:98:00.0: driver message (no Xid): GPU failed to initialise (RmInitAdapter failed)"
        " -> replace; a GPU (no PCI address in the message): driver message (no Xid): GSP firmware"
        " failed to start -> reset_gpu"
    )


BAD_REGISTER_READ = "dmesg__possible-bad-register-read-0xbadf5040-no-xid__gh200__ogkm-688.txt"  # ogkm #688


def test_a_known_bad_register_read_alone_warns_naming_the_line() -> None:
    """NVIDIA/open-gpu-kernel-modules #688's GH200 (six `NVRM: gpuHandleSanityCheckRegReadError_GH100:
    Possible bad register read: ... regvalue: 0xbadf5040, error code: ..._FECS_PRI_CLIENT_ERR` lines
    at boot, no Xid): a driver message that issue shows printed on working GPUs each time `nvidia-smi
    -L` runs (a driver bug). It failed gpu_xid -> reboot on its own (this test asserted so before:
    changed on purpose); alone it now warns, naming the line; beside other signs it fails
    (tests/unit/steps/checks/test_xid_catalogue.py)."""
    log = parse_kernel_log((REAL / BAD_REGISTER_READ).read_text())
    assert not log.xids() and not log.unread()
    assert [e.fault for e in log.events] == ["bad_register_read"] * 6
    check = rule_xid(log.events, True, "", [], log.covers_boot)
    assert check.verdict == "warn", check
    assert "a known driver message on some releases; a fault only with other signs" in check.actual
    assert "addr: 0x920bc, regvalue: 0xbadf5040" in check.actual and check.actual.endswith("x6 -> noted")


@pytest.mark.parametrize(
    "function", ["gpuHandleSanityCheckRegReadError_GA100", "gpuHandleSanityCheckRegReadError_TU102"]
)
def test_a_bad_register_read_of_any_driver_generation_is_the_same_fault(function: str) -> None:
    # the capture's first line with the function name another GPU generation's driver prints
    line = (REAL / BAD_REGISTER_READ).read_text().splitlines()[0]
    log = parse_kernel_log(line.replace("gpuHandleSanityCheckRegReadError_GH100", function) + "\n")
    assert [e.fault for e in log.events] == ["bad_register_read"]
