"""A kernel log whose lines a chat joined (every line break a space) in a folder with other
saved outputs: that file alone is not read (the kernel rules unverified, naming it and how to save
it again), every other output of the folder is judged. Before (round 31), the joined log was
refused with an error that ended the whole run: a folder with a good `nvidia-smi -L` judged
nothing."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.api import offline

REAL = Path(__file__).parents[2] / "fixtures" / "real"
LOG = "dmesg-T__xid-79-unknown-pid__titan-v.txt"  # (a fatal Xid 79, fail when read whole)
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


def test_a_joined_kernel_log_in_a_folder_leaves_the_rest_judged(tmp_path: Path) -> None:
    whole = _checks(tmp_path / "whole", (REAL / LOG).read_text(encoding="utf-8"))
    assert whole["gpu_xid"][0] == "fail"
    joined = _checks(tmp_path / "joined", (REAL / LOG).read_text(encoding="utf-8").replace("\n", " "))
    assert joined["gpu_count"] == whole["gpu_count"]
    assert joined["gpu_count"][0] == "pass"
    said = " ".join(joined["gpu_xid"])
    assert joined["gpu_xid"][0] == "unverified"
    assert "dmesg.txt" in said
    assert "several messages on one line" in said
