"""facts/kernel_instance.py: a driver fault sentence that names no PCI address takes the address
the kernel log itself ties it to (the driver's instance number `GPUn` paired with an address by
an Xid line or by RmInitAdapter's next line; the banner of the Xid line right after it), so a
slice of a bigger machine is not failed for another tenant's GPU; one the log does not tie stays
without an address (and fails a slice: it may be the rental's)."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.facts.kernel_log import parse_kernel_log
from gpuonboard.steps.checks.xid_rules import rule_xid

REAL = Path(__file__).parents[2] / "fixtures" / "real"
# NVIDIA/open-gpu-kernel-modules #446 (save-buffer, 2024-05-30): `_kgspLogXid119: *** GSP Timeout
# ***` (no address), then the preamble and `Xid (PCI:0000:83:00): 119, ... from GPU0 GSP!`
BANNER = (REAL / "dmesg__gsp-timeout-banner-then-xid119-from-gpu0__rtx3060__driver555.42.02.txt").read_text()
# ublue-os/bazzite #4449: `NVRM: GPU0 _kgspRpcRecvPoll: GSP RM heartbeat timed out`, no Xid
UNPAIRED = (
    REAL / "dmesg-journalctl-k-no-hostname__gsp-heartbeat-timeout-gpu0-unpaired__bazzite.txt"
).read_text()
# NVIDIA/open-gpu-kernel-modules #1058: `GPU0 RmInitAdapter: Cannot initialize GSP firmware RM`,
# then `GPU 0000:01:00.0: RmInitAdapter failed!`
WPR2 = (REAL / "dmesg__gpu0-cannot-initialize-gsp-wpr2-up__rtx3080-laptop__gh100.txt").read_text()
OTHER_GPU = [(0, "00000000:04:00.0")]  # the slice's one GPU (an RTX 3080 at 04:00.0)


def test_a_gsp_timeout_banner_is_about_the_gpu_of_the_xid_119_after_it() -> None:
    """The banner named no GPU, so on a slice whose GPU is 04:00.0 it failed the rental ("a GPU
    (no PCI address in the message): GSP firmware timeout") beside another tenant's Xid 119."""
    log = parse_kernel_log(BANNER)
    banner = next(e for e in log.events if e.kind == "nvrm")
    assert (banner.fault, banner.pci) == ("gsp_timeout", "0000:83:00")
    assert banner.pci_from == "tied as the banner of the Xid 119 line after it"
    check = rule_xid(log.events, True, "", OTHER_GPU, True, slice_="a container")
    assert (check.verdict, check.actual) == (
        "warn",
        "GPU at PCI 0000:83:00 (a GPU this rental does not show): Xid 119 GSP RPC Timeout -> reset_gpu",
    )
    own = rule_xid(log.events, True, "", [(0, "00000000:83:00.0")], True, slice_="a container")
    assert (own.verdict, own.actual) == ("fail", "GPU 0 (0000:83:00): Xid 119 GSP RPC Timeout -> reset_gpu")


def test_an_instance_an_xid_line_names_ties_the_drivers_lines_of_it() -> None:
    """bazzite #4449's `NVRM: GPU0 _kgspRpcRecvPoll: GSP RM heartbeat timed out` (its journalctl
    prefix kept) after #446's real Xid 119 line, which names the same instance (`from GPU0 GSP!`):
    two real captures joined in-test. The sentence is GPU0's, the Xid line's 0000:83:00, not the
    slice's GPU: it warns, as the Xid does (it failed the rental)."""
    xid = BANNER.splitlines()[4]
    text = xid + "\n" + UNPAIRED.splitlines()[3] + "\n"
    log = parse_kernel_log(text)
    sentence = next(e for e in log.events if e.kind == "nvrm")
    assert (sentence.fault, sentence.pci) == ("gsp_timeout", "0000:83:00")
    assert sentence.pci_from == "tied by the log's GPU0 instance"
    check = rule_xid(log.events, True, "", OTHER_GPU, True, slice_="a container")
    assert check.verdict == "warn"


def test_an_instance_the_log_does_not_pair_stays_without_an_address() -> None:
    """bazzite #4449 as posted: GPU0's heartbeat timeouts and no line that pairs GPU0 with an
    address: whose GPU it is cannot be told, so it fails a slice too."""
    log = parse_kernel_log(UNPAIRED)
    faults = [e for e in log.events if e.kind == "nvrm"]
    assert [(e.fault, e.pci, e.pci_from) for e in faults] == [("gsp_timeout", "", None)]
    check = rule_xid(log.events, True, "", OTHER_GPU, True, slice_="a container")
    assert check.verdict == "fail"
    assert check.actual.startswith("a GPU (no PCI address in the message)")


def test_rminitadapter_pairs_its_instance_with_the_address_it_prints_next() -> None:
    """#1058: `GPU0 RmInitAdapter: Cannot initialize GSP firmware RM`, then (after a line that is
    no fault) `GPU 0000:01:00.0: RmInitAdapter failed!`: the GSP failure is that GPU's."""
    log = parse_kernel_log(WPR2)
    assert [(e.fault, e.pci) for e in log.events if e.kind == "nvrm"] == [
        ("gpu_bad_state_reset", "0000:01:00.0"),  # (its `(the GPU is likely in a bad state ...)`)
        ("gsp_init_failed", "0000:01:00.0"),
        ("rm_init_adapter_failed", "0000:01:00.0"),
        ("rm_init_adapter_failed", "0000:01:00.0"),
    ]


# a Dell XE9680's real `Xid (PCI:0000:9b:00): 119, ... from GPU4 GSP!` (dmesg -T)
XE9680 = (REAL / "dmesg-T__xid-119-gsp-timeout__h100-dell-xe9680.txt").read_text()
# a real `NVRM: GPU6 _kgspLogRpcTimeout: *** GSP Timeout ***` banner, no address, no Xid after it
GPU6 = (REAL / "dmesg__gsp-heartbeat-timeout-gpu6-no-pci__driver595.71.05.txt").read_text()


def test_a_gsp_timeout_sentence_that_is_no_banner_is_not_tied_to_the_next_xid() -> None:
    """#446's line 1 edited in-test to bazzite #4449's sentence for instance GPU1 (`[   22.275339]
    NVRM: GPU1 _kgspRpcRecvPoll: GSP RM heartbeat timed out`), then #446's real Xid 119 line (line 5,
    `... from GPU0 GSP!`, 0000:83:00). The sentence is no banner and the log says it is GPU1's, the
    Xid GPU0's: it was tied to 83:00 and a slice whose GPU is 04:00.0 warned; it fails again."""
    sentence = "[   22.275339] NVRM: GPU1 _kgspRpcRecvPoll: GSP RM heartbeat timed out"
    log = parse_kernel_log(sentence + "\n" + BANNER.splitlines()[4] + "\n")
    nvrm = next(e for e in log.events if e.kind == "nvrm")
    assert (nvrm.fault, nvrm.pci, nvrm.pci_from) == ("gsp_timeout", "", None)
    check = rule_xid(log.events, True, "", OTHER_GPU, True, slice_="a container")
    assert check.verdict == "fail"
    assert check.actual.startswith("a GPU (no PCI address in the message): driver message (no Xid): GSP")


def test_a_banner_carrying_its_instance_is_not_tied_to_another_instances_xid() -> None:
    """The real GPU6 log (its `GPU6 _kgspLogRpcTimeout: *** GSP Timeout ***` banner last), then
    the XE9680's real Xid 119 line (line 3, `from GPU4 GSP!`, 0000:9b:00), its `[Sun Feb 23 ...]`
    stamp kept: the banner is GPU6's, the Xid GPU4's. It was tied to 9b:00 (a warn on a slice whose
    GPU is 04:00.0); it stays without an address and fails."""
    log = parse_kernel_log(GPU6 + XE9680.splitlines()[2] + "\n")
    banner = [e for e in log.events if e.kind == "nvrm" and "GSP Timeout" in e.message]
    assert [(e.pci, e.pci_from) for e in banner] == [("", None)]
    check = rule_xid(log.events, True, "", OTHER_GPU, True, slice_="a container")
    assert check.verdict == "fail"
    assert check.actual.startswith("a GPU (no PCI address in the message)")


def test_a_banner_carrying_the_instance_its_xid_names_is_tied() -> None:
    """Control: the GPU6 banner line edited in-test to GPU4 (`NVRM: GPU4 _kgspLogRpcTimeout: ***
    GSP Timeout ***`), then the XE9680's Xid line naming GPU4: the log ties it to 0000:9b:00."""
    banner = GPU6.splitlines()[-1].replace("GPU6", "GPU4")
    log = parse_kernel_log(banner + "\n" + XE9680.splitlines()[2] + "\n")
    nvrm = next(e for e in log.events if e.kind == "nvrm")
    assert (nvrm.fault, nvrm.pci) == ("gsp_timeout", "0000:9b:00")


# scitix/sichek #51: the driver's `nvAssertOkFailedNoLog: ... Reset required [NV_ERR_RESET_REQUIRED]`
RESET = (REAL / "dmesg-T__nv-err-reset-required-no-xid__gsp.txt").read_text()


def test_an_address_the_log_only_ties_a_sentence_to_says_so() -> None:
    """The XE9680's real Xid 119 line (`from GPU4 GSP!`, 0000:9b:00), then sichek #51's real
    `NVRM: nvAssertOkFailedNoLog: ... [NV_ERR_RESET_REQUIRED] ...` line edited in-test to carry
    the instance as R550's NV_PRINTF prints it (`NVRM: GPU4 nvAssertOkFailedNoLog: ...`): the
    sentence is GPU4's, 0000:9b:00, which the log tied, not printed; it was reported exactly as an
    address the driver printed, and now says how it was tied."""
    line = RESET.splitlines()[1].replace("NVRM: nvAssert", "NVRM: GPU4 nvAssert", 1)
    log = parse_kernel_log(XE9680.splitlines()[2] + "\n" + line + "\n")
    check = rule_xid(log.events, True, "", [(4, "00000000:9B:00.0")], True)
    assert check.verdict == "fail"
    assert (
        "GPU 4 (0000:9b:00): driver message (no Xid; its address tied by the log's GPU4 instance):"
        " GPU requires a reset (NV_ERR_RESET_REQUIRED) -> reset_gpu"
    ) in check.actual
