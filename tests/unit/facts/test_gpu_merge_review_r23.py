"""Round 23's review of the merge of nvidia-smi's formats, on real captures (each case edited in
the test where it says so): a lost GPU beside a `-L` of every GPU is no fifth GPU; a redacted
UUID or serial is no disagreement; a listing that says it lists every GPU (its own count) and
lacks one the others list is a disagreement, not a cut; an empty answer of one format beside
others' failure words is nvidia-smi's failure; a GPU whose MIG mode changes at its next reset
reads N/A where its peers read values, and its process list answers foreign_processes."""

from __future__ import annotations

import re
from pathlib import Path

from gpuonboard.api.command_line import runs
from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.gpu_probes import GPU_SOURCES
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.steps.checks.gpu_rules import rule_driver

from ..offline_judge import judged_box

REAL = Path(__file__).parents[2] / "fixtures" / "real"
LOST = REAL / "nvidia-smi__rtx-pro-6000-blackwell__4gpu-1-lost__driver610.57.04.txt"
H200_Q = REAL / "nvidia-smi-q__h200__1gpu__driver580.159.04.txt"
H200_XML = REAL / "nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml"
HPE_TABLE = REAL / "nvidia-smi__a100-pcie-40gb__2gpu__driver555.42.02.txt"
HPE_ECC = REAL / "nvidia-smi-q-d-ecc__a100-pcie-40gb__2gpu__driver555.42.02.txt"
MIG_PENDING = REAL / "nvidia-smi__a100-sxm4-40gb__8gpu__driver450.102.04__mig-pending-gpu7__dgx-doc.txt"


def test_a_lost_gpu_beside_a_listing_of_every_gpu_is_no_fifth_gpu(tmp_path: Path) -> None:
    """The real table of 4 GPUs, one lost ("Unable to determine the device handle for GPU1"),
    beside an `-L` of the 4 (taken before the loss; its lines written here from the table's
    model): `-L` was taken as wider than the table's 3 and the lost GPU added again as a fifth,
    so gpu_count passed "5 (1 unreadable)"."""
    name = "NVIDIA RTX PRO 6000 Blackwell Workstation Edition"
    listing = "".join(
        f"GPU {i}: {name} (UUID: GPU-11111111-2222-3333-4444-55555555555{i})\n" for i in range(4)
    )
    files = {LOST.name: LOST.read_text(), "nvidia-smi-L.txt": listing}
    _, got = judged_box(tmp_path, files, "gpu_model: RTX PRO 6000\ngpu_count: 4\n")
    assert (got["gpu_count"].verdict, got["gpu_count"].actual) == ("fail", "4 (1 unreadable)")


def test_a_redacted_uuid_or_serial_is_no_disagreement(tmp_path: Path) -> None:
    """The real H200 `-q` beside the same box's `-q -x` whose serial or UUID was redacted for
    sharing (as the real RTX 3080 and RTX 4000 SFF captures were): nvidia_driver failed "the
    nvidia-smi outputs disagree: serial REDACTED in -q -x, 1653924042524 in -q"."""
    xml = H200_XML.read_text()
    for i, (old, new) in enumerate(
        [
            (r"<serial>\d+</serial>", "<serial>REDACTED</serial>"),
            (r"<uuid>GPU-[0-9a-f-]+</uuid>", "<uuid>GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx</uuid>"),
            (r"<uuid>GPU-[0-9a-f-]+</uuid>", "<uuid>&lt;redacted&gt;</uuid>"),
        ]
    ):
        edited, n = re.subn(old, new, xml)
        assert n == 1
        facts, got = judged_box(
            tmp_path / str(i), {H200_Q.name: H200_Q.read_text(), H200_XML.name: edited}, "gpu_count: 1\n"
        )
        assert facts.gpu is not None and facts.gpu.disagreements == (), facts.gpu.disagreements
        assert got["nvidia_driver"].verdict == "pass", got["nvidia_driver"]


def test_a_listing_that_says_it_lists_every_gpu_and_lacks_one_disagrees(tmp_path: Path) -> None:
    """The real HPE A100 `-q -d ECC` edited to one GPU (GPU 1's block taken out and "Attached
    GPUs : 1": a box whose GPU 1 fell off between calls) beside the same box's table of 2: it
    says it lists every GPU, so it is no listing cut at a line end (it was taken for one)."""
    text = HPE_ECC.read_text()
    one = text[: text.index("\nGPU 00000000:8A:00.0")] + "\n"
    one = one.replace(
        "Attached GPUs                             : 2", "Attached GPUs                             : 1"
    )
    assert one != text and ": 1" in one
    facts, got = judged_box(
        tmp_path, {HPE_TABLE.name: HPE_TABLE.read_text(), HPE_ECC.name: one}, "gpu_count: 2\n"
    )
    driver = got["nvidia_driver"]
    assert driver.verdict == "fail" and "the nvidia-smi outputs disagree" in driver.actual, driver
    assert "00000000:8A:00.0" in driver.actual


def test_one_empty_format_beside_others_failure_words_is_nvidia_smis_failure() -> None:
    """`-q -x` exits 0 with nothing while the other formats print NVML's failure: the empty
    answer was taken for every format's, and nvidia_driver said unverified "answered with
    nothing"; the failure words say why no GPU was read."""
    mismatch = "Failed to initialize NVML: Driver/library version mismatch\n"
    raw = {name: ProbeOutput(mismatch, "", 18) for name, _, _ in GPU_SOURCES}
    raw[GPU_SOURCES[0][0]] = ProbeOutput("", "", 0)
    check = rule_driver(parse_facts(raw))
    assert check.verdict == "fail" and "mismatch" in (check.actual + check.detail), check


def test_a_gpu_whose_mig_mode_changes_at_reset_reads_na_where_its_peers_do_not(tmp_path: Path) -> None:
    """The real DGX A100 table with GPU 7's MIG mode pending (`Disabled*`: its utilisation N/A),
    made idle here (no load, no process): foreign_processes passes on the process list, as it
    did before round 23 ("GPU 7: utilization not reported" made it unverified)."""
    text = MIG_PENDING.read_text()
    text = re.sub(r"\d+MiB / 40537MiB", "0MiB / 40537MiB", text)
    text = re.sub(r"\b\d+%( +Default)", r"0%\1", text)
    head = text[: text.index("| Processes:")]
    text = head + (
        "| Processes:                                                                  |\n"
        "|  GPU   GI   CI        PID   Type   Process name                  GPU Memory |\n"
        "|        ID   ID                                                   Usage      |\n"
        "|=============================================================================|\n"
        "|  No running processes found                                                 |\n"
        "+-----------------------------------------------------------------------------+\n"
    )
    _, got = judged_box(tmp_path, {MIG_PENDING.name: text}, "gpu_count: 8\n")
    assert got["foreign_processes"].verdict == "pass", got["foreign_processes"]


def test_a_double_dash_after_a_wrappers_command_is_the_commands() -> None:
    """`sudo grep -- -x file`: the `--` after grep is grep's (the one getopt reader of round 23
    dropped it, reading `-x` as grep's option)."""
    (ran,) = runs("sudo grep -- -x /var/log/kern.log")
    assert ran.head[:3] == ["grep", "--", "-x"], ran.head
