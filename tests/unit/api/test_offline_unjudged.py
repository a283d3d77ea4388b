"""A `--query-gpu` CSV of one field no rule reads (`compute_cap`; `fan.speed` with noheader under
its command): named in a note and the folder's other files judged (before: the whole folder
refused as "not a recognised command output (expected ... --query-gpu CSV ...)"); a column of
`[N/A]` alone, whose field cannot be told, refused in one sentence naming it. The captures are
ollama/ollama#9031's and pmav99/nvsmi#2's (tests/fixtures/real/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.errors import UsageError

REAL = Path(__file__).parents[2] / "fixtures" / "real"
COMPUTE_CAP = "nvidia-smi-query-gpu__compute-cap-only__2gpu__ollama-9031.csv"
BANNER = "nvidia-smi__banner-cut-after-first-line__driver570.86.15__ollama-9031.txt"
FAN = "nvidia-smi-query-gpu__fan-speed-noheader-na__1gpu__nvsmi-2.csv"


# the command lines above each capture, put back (its SOURCES.md row)
COPIED = {
    COMPUTE_CAP: "nvidia-smi -i 0,1 --query-gpu=compute_cap --format=csv\n",
    BANNER: " nvidia-smi\n",
    FAN: "$ nvidia-smi --query-gpu=fan.speed --format=csv,noheader,nounits\n",
}


def folder(tmp_path: Path, *names: str) -> Path:
    for name in names:
        (tmp_path / name).write_text(COPIED[name] + (REAL / name).read_text())
    return tmp_path


def test_a_compute_cap_csv_is_named_and_the_banner_beside_it_judged(tmp_path: Path) -> None:
    notes: list[str] = []
    raw = offline.load_outputs([str(folder(tmp_path, COMPUTE_CAP, BANNER))], notes)
    assert sorted(raw) == ["nvidia_smi_table"]
    said = " ".join(notes)
    assert "a `--query-gpu` CSV of compute_cap only (2 row(s): 9.0), no field the rules read" in said
    assert "name,memory.total" in said
    facts = offline.parse_facts(raw)
    assert facts.gpu is not None and facts.gpu.driver_version == "570.86.15"
    (tmp_path / "order.yml").write_text("gpu_model: H200\ngpu_count: 8\n")
    order = offline.load_order(str(tmp_path / "order.yml"))
    verdicts = {c.name: c.verdict for c in offline.judge(facts, order)}
    assert verdicts["gpu_count"] == verdicts["gpu_model"] == "unverified"


def test_a_noheader_fan_speed_under_its_command_alone_is_named(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as err:
        offline.load_outputs([str(folder(tmp_path, FAN))])
    said = str(err.value)
    assert "a `--query-gpu` CSV of fan.speed only (1 row(s): [N/A])" in said
    assert "nothing is judged" in said and "not a recognised" not in said


def test_a_column_of_na_without_its_command_is_refused_naming_it(tmp_path: Path) -> None:
    """The nvsmi#2 capture without its command line."""
    path = tmp_path / "fan.csv"
    path.write_text((REAL / FAN).read_text())
    with pytest.raises(UsageError) as err:
        offline.load_outputs([str(path)])
    assert "a column of [N/A] alone, with no header or command line above it" in str(err.value)


def test_a_one_field_csv_the_rules_read_is_not_taken_for_unjudged() -> None:
    from gpuonboard.api.unjudged import one_field_csv

    assert one_field_csv("", "memory.total [MiB]\n81920 MiB\n") is None
    assert one_field_csv("nvidia-smi --query-gpu=pcie.link.gen.max --format=csv,noheader", "4\n") is None
    assert one_field_csv("", "compute_cap, name\n9.0, NVIDIA H200\n") is None
