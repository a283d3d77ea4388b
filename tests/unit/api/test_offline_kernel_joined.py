"""A kernel log whose lines a chat joined (every line break a space) in a folder with other
saved outputs: cut apart at its stamps and judged as the log where every piece is one of its
lines (facts/joined_log.py: the Titan V's fatal Xid 79 fails); else that file alone is not read
(the kernel rules unverified, naming it and how to save it again), every other output of the
folder judged. Before (round 31), the joined log was refused with an error that ended the whole
run: a folder with a good `nvidia-smi -L` judged nothing; then (round 32) no joined log was read:
the Xid 79 went unjudged."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.api import offline

REAL = Path(__file__).parents[2] / "fixtures" / "real"
LOG = "dmesg-T__xid-79-unknown-pid__titan-v.txt"  # (a fatal Xid 79, fail when read whole)
# (GPU 0000:b3:00.0 fallen off the bus, its message going on in stamp-less `NVRM: ` lines)
CONTINUED = "dmesg__nvrm-fallen-off-bus-no-xid__driver570.158.01.txt"
GPUS = "nvidia-smi-L__l40s__1gpu__driver595.80.txt"


def _checks(folder: Path, log: str) -> dict[str, tuple[str, str, str]]:
    folder.mkdir()
    (folder / "dmesg.txt").write_text(log, encoding="utf-8")
    (folder / "nvidia-smi-L.txt").write_text((REAL / GPUS).read_text(encoding="utf-8"), encoding="utf-8")
    (folder / "order.yml").write_text("gpu_count: 1\n")
    facts = offline.parse_facts(
        offline.load_outputs([str(folder / "dmesg.txt"), str(folder / "nvidia-smi-L.txt")])
    )
    order = offline.load_order(str(folder / "order.yml"))
    return {c.name: (c.verdict, c.actual, c.detail) for c in offline.judge(facts, order)}


def test_a_joined_kernel_log_cut_apart_at_its_stamps_is_judged(tmp_path: Path) -> None:
    whole = _checks(tmp_path / "whole", (REAL / LOG).read_text(encoding="utf-8"))
    assert whole["gpu_xid"][0] == "fail"
    joined = _checks(tmp_path / "joined", (REAL / LOG).read_text(encoding="utf-8").replace("\n", " "))
    assert joined["gpu_count"] == whole["gpu_count"]
    assert joined["gpu_xid"][0] == "fail"
    assert "GPU at PCI 0000:02:00: Xid 79 GPU has fallen off the bus" in joined["gpu_xid"][1]


def test_a_joined_kernel_log_in_a_folder_leaves_the_rest_judged(tmp_path: Path) -> None:
    whole = _checks(tmp_path / "whole", (REAL / CONTINUED).read_text(encoding="utf-8"))
    assert whole["gpu_xid"][0] == "fail"
    joined = _checks(tmp_path / "joined", (REAL / CONTINUED).read_text(encoding="utf-8").replace("\n", " "))
    assert joined["gpu_count"] == whole["gpu_count"]
    assert joined["gpu_count"][0] == "pass"
    said = " ".join(joined["gpu_xid"])
    assert joined["gpu_xid"][0] == "unverified"
    assert "dmesg.txt" in said
    assert "several messages on one line" in said
