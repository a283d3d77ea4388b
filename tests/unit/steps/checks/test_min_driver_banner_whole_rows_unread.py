"""min_driver over an nvidia-smi table whose banner was read whole but none of whose GPU rows
could be (cut short above them, words above its border): the version is not judged, and the
sentence says no GPU row was read, never that the banner is "not whole" (review revJ F5:
measure33c/06-llmd720's whole banner was said "as the banner reads it, not whole"). A banner
cut through its versions still says so.

Real capture: the nvidia-smi table of tests/fixtures/real (SOURCES.md), its first 7 lines; the
sentence above it and the cut are the test input."""

from __future__ import annotations

from pathlib import Path

from ...offline_judge import verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
NAME = "nvidia-smi__a100-80gb-pcie-mig__1gpu__driver550.54.14__cuda-na__oc-exec-driver-daemonset"
TABLE = (REAL / f"{NAME}__k8s-dra-driver.txt").read_text()
HEAD = "\n".join(TABLE.split("\n")[:7])
ORDER = 'min_driver: "500"\n'


def test_a_whole_banner_above_no_row_is_not_said_cut(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "nvidia-smi.txt", f"the server printed this:\n{HEAD}\n", ORDER)
    verdict, actual = got["min_driver"]
    assert verdict == "unverified", got["min_driver"]
    assert "not whole" not in actual and "no GPU row read" in actual, actual
    assert "driver 550.54.14" in actual, actual


def test_a_banner_cut_through_its_versions_is_said_not_whole(tmp_path: Path) -> None:
    lines = HEAD.split("\n")
    cut = "\n".join([lines[0], lines[1][:60]])
    got = verdicts(tmp_path, "nvidia-smi.txt", f"the server printed this:\n{cut}\n", ORDER)
    assert got["min_driver"][0] == "unverified" and "not whole" in got["min_driver"][1], got["min_driver"]
