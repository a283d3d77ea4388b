"""Outputs of tools this tool does not read offline are refused by name, saying what they show
and what to save (api/named_outputs.py; measure39c 12, 13, measure39e 18, measure39d 12): DCGM's
`dcgmi discovery -l` listing, its `dcgmi diag -r N` text table and `-j` JSON, Hugging Face's
`accelerate env` report, and an `lscpu -e` of columns the user chose; never the generic "not a
recognised command output", whose list of the outputs read names none of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.errors import UsageError

from ..offline_judge import judged_box

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"
PUBLIC = Path(__file__).resolve().parents[2] / "fixtures" / "public"
DISCOVERY = "dcgmi-discovery-l__4x-h100-null-names__host-socket-colon-prompt__cut-in-gpu2__dcgm-229.txt"
DIAG_TABLE = "dcgmi-diag-r2-table__t4-dcgm-3.3.1-driver535.129.03__cut-in-deployment-row__go-dcgm-52.txt"
ACCELERATE = "accelerate-env__rtx3070-laptop-system-ram-62.50gb__accelerate-2623.txt"
LSCPU_E = "lscpu-extended-modelname__snapdragon-7-cpus__hash-prompt-poster-comment__util-linux-3062.txt"
GENERIC = "not a recognised command output"
H100_TABLE = "nvidia-smi__h100-80gb-hbm3__1gpu-of-8__driver545.23.08__prompt__princeton-della.txt"


def _refusal(tmp_path: Path, text: str, name: str = "box.txt") -> str:
    (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(UsageError) as err:
        offline.load_outputs([str(tmp_path / name)])
    return str(err.value)


def test_dcgmi_discovery_is_named_with_its_gpus_and_null_names(tmp_path: Path) -> None:
    said = _refusal(tmp_path, (REAL / DISCOVERY).read_text(encoding="utf-8"))
    assert GENERIC not in said
    assert "a `dcgmi discovery -l` listing of 4 GPUs" in said and "`<<<NULL>>>`" in said, said
    assert "3 of them shown" in said and "save `nvidia-smi -q`" in said


def test_dcgmi_discovery_with_names_lists_them(tmp_path: Path) -> None:
    text = (REAL / DISCOVERY).read_text(encoding="utf-8").replace("<<<NULL>>>", "NVIDIA H100 80GB HBM3")
    said = _refusal(tmp_path, text)
    assert "(NVIDIA H100 80GB HBM3; 3 of them shown)" in said.replace(" HBM3,", " HBM3;"), said


@pytest.mark.parametrize("cut", [0, 1])
def test_dcgmi_diag_table_is_named_with_version_driver_and_cut(tmp_path: Path, cut: int) -> None:
    text = (REAL / DIAG_TABLE).read_text(encoding="utf-8")
    if not cut:  # (the table closed: its last row whole, its border below it)
        text = (
            text.rstrip("\n")
            + "                                           |\n+"
            + "-" * 27
            + "+"
            + "-" * 48
            + "+\n"
        )
    said = _refusal(tmp_path, text)
    assert GENERIC not in said
    assert "a `dcgmi diag -r 2` table (DCGM 3.3.1, driver 535.129.03, 8 test rows read" in said, said
    assert ("cut short before its closing border" in said) == bool(cut)
    assert ("whole)" in said) != bool(cut)


def test_dcgmi_diag_table_names_a_failing_row(tmp_path: Path) -> None:
    text = (
        (REAL / DIAG_TABLE)
        .read_text(encoding="utf-8")
        .replace(
            "| Persistence Mode          | Pass                                           |",
            "| Persistence Mode          | Fail - GPU: 0                                  |",
        )
    )
    said = _refusal(tmp_path, text)
    assert "its Fail/Warn rows: Persistence Mode: Fail - GPU: 0" in said, said


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        (
            "dcgmi-diag-j__dcgm-3.1.0__8gpu__all-pass.txt",
            "DCGM 3.1.0, 10 tests read, none of them Fail or Warn, whole",
        ),
        (
            "dcgmi-diag-j__dcgm-4.5.2__gb10__level2__software-fail.json",
            "driver 580.82.09, 3 tests read, failing or warning: software: Fail on GPU 0, whole",
        ),
    ],
)
def test_dcgmi_diag_json_is_named_with_its_failing_tests(tmp_path: Path, name: str, shown: str) -> None:
    said = _refusal(tmp_path, (PUBLIC / name).read_text(encoding="utf-8"), name)
    assert GENERIC not in said
    assert "a `dcgmi diag -j` document (" in said and shown in said, said


def test_dcgmi_diag_json_cut_short_is_said(tmp_path: Path) -> None:
    text = (PUBLIC / "dcgmi-diag-j__dcgm-3.1.0__8gpu__all-pass.txt").read_text(encoding="utf-8")
    said = _refusal(tmp_path, text[: len(text) // 2])
    assert "a `dcgmi diag -j` document (" in said and "cut short" in said and "whole)" not in said, said


def test_accelerate_env_is_named_with_its_ram_and_gpu_type(tmp_path: Path) -> None:
    said = _refusal(tmp_path, (REAL / ACCELERATE).read_text(encoding="utf-8"))
    assert GENERIC not in said
    assert (
        "an `accelerate env` report (System RAM: 62.50 GB; GPU type: NVIDIA GeForce RTX 3070 Laptop GPU)"
        in said
    )
    assert "save `nvidia-smi -q` and `free -k`" in said


@pytest.mark.parametrize(
    "text",
    [
        None,  # (the real capture: `# lscpu --extended=MODELNAME`, its lone MODELNAME column)
        "CPU MODELNAME\n0 Cortex-A510\n1 Cortex-A715\n",
        "$ lscpu -e=CPU,MAXMHZ,MINMHZ\nCPU  MAXMHZ    MINMHZ\n  0  3000.0    800.0\n  1  3000.0    800.0\n",
    ],
)
def test_lscpu_e_of_chosen_columns_is_refused_as_lscpu_e(tmp_path: Path, text: str | None) -> None:
    said = _refusal(tmp_path, text or (REAL / LSCPU_E).read_text(encoding="utf-8"))
    assert "`lscpu -e` / `lscpu -p` (one line per CPU)" in said and "save plain `lscpu`" in said, said


def test_beside_the_box_s_nvidia_smi_a_dcgmi_output_is_a_note(tmp_path: Path) -> None:
    smi = (REAL / H100_TABLE).read_text(encoding="utf-8")
    facts, judged = judged_box(
        tmp_path,
        {"nvidia-smi.txt": smi, "dcgmi.txt": (REAL / DISCOVERY).read_text(encoding="utf-8")},
        "gpu_model: H100 80GB HBM3\n",
    )
    assert judged["gpu_model"].verdict in ("pass", "unverified") and "H100" in judged["gpu_model"].actual
    notes: list[str] = []
    offline.load_outputs([str(tmp_path / "box")], notes)
    assert any("a `dcgmi discovery -l` listing of 4 GPUs" in n for n in notes), notes


def test_a_transformers_env_report_of_the_same_shape_is_named(tmp_path: Path) -> None:
    text = (REAL / ACCELERATE).read_text(encoding="utf-8")
    text = text.replace("- `Accelerate` version: 0.29.0.dev0", "- `transformers` version: 4.40.0")
    said = _refusal(tmp_path, text)
    assert "a `transformers env` report (System RAM: 62.50 GB" in said, said
