"""min_driver by the kernel log's driver load line where no nvidia-smi output names the driver
(m32d 5, 6: `NVRM: loading NVIDIA UNIX x86_64 Kernel Module  325.15`, `... Open Kernel Module for
x86_64  530.41.03` were left unverified, "no nvidia-smi output was given")."""

from __future__ import annotations

from pathlib import Path

import pytest

from ...offline_judge import judged_box, verdicts

REAL = Path(__file__).resolve().parents[3] / "fixtures" / "real"
OLD = "var-log-messages__bbswitch-nvrm-loading-325.15__bumblebee-455.txt"
OPEN = "dmesg__e820-chipset-setup-error-open-module-530.41.03__ogkm-489.txt"
SMI_535 = "nvidia-smi-q-x__a100-sxm4-80gb__1of4gpu__driver535.54.03.xml"


def read(name: str) -> str:
    return (REAL / name).read_text(encoding="utf-8")


@pytest.mark.parametrize(("name", "need", "version"), [(OLD, "470", "325.15"), (OPEN, "535", "530.41.03")])
def test_a_driver_older_than_the_minimum_fails_by_the_logs_load_line(
    tmp_path: Path, name: str, need: str, version: str
) -> None:
    verdict, actual = verdicts(tmp_path, "dmesg.txt", read(name), f'min_driver: "{need}"\n')["min_driver"]
    assert verdict == "fail", actual
    assert actual.startswith(version) and "kernel log's driver load line" in actual


def test_at_or_above_the_minimum_passes_only_where_the_log_is_whole_after_the_line(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "dmesg.txt", read(OPEN), 'min_driver: "530"\n')["min_driver"]
    assert got[0] == "pass", got
    cut = read(OPEN).rstrip("\n") + "\n[   67.2] NVRM: Xid (PCI:0000:01:00): 7"  # (cut inside a line)
    got = verdicts(tmp_path, "dmesg.txt", cut, 'min_driver: "530"\n')["min_driver"]
    assert got[0] == "unverified" and "cut short" in got[1], got


def test_the_last_load_line_is_the_loaded_driver(tmp_path: Path) -> None:
    reload = "[  900.1] NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  550.54.14  Release Build\n"
    got = verdicts(tmp_path, "dmesg.txt", read(OPEN) + reload, 'min_driver: "535"\n')["min_driver"]
    assert got[0] == "pass" and got[1].startswith("550.54.14"), got


def test_nvidia_smis_driver_wins_and_a_disagreement_is_said(tmp_path: Path) -> None:
    files = {"nvidia-smi-q-x.xml": read(SMI_535), "dmesg.txt": read(OPEN)}
    _, checks = judged_box(tmp_path, files, 'min_driver: "535"\n')
    check = checks["min_driver"]
    assert check.verdict == "pass", check
    assert check.actual == "535.54.03 (nvidia-smi; the kernel log's last driver load line says 530.41.03)"
