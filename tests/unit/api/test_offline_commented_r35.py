"""An output every line of which a comment mark starts, with or without a blank after it (a doc's
`#|   0  NVIDIA GeForce ...  Off  |`, measure35e 06): the mark is markup around the whole block,
dropped once from each line as a quote's `> ` is (api/saved_text.py _uncommented). Before, a
bare `#` was kept: the table's banner was read and none of its GPU rows (gpu_count and min_driver
unverified)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import Facts, parse_facts

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
CORTEX = (
    "nvidia-smi__geforce-name-cut__1gpu-1998mib__driver470.256.02__docker-run-cuda12.4"
    "__copied-command__hash-commented-no-space__cortex-notes.txt"
)


def _facts(tmp_path: Path, name: str, text: str) -> Facts:
    folder = tmp_path / f"d{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    (folder / name).write_text(text, encoding="utf-8")
    return parse_facts(offline.load_outputs([str(folder / name)]))


def _read(facts: Facts) -> tuple[object, ...]:
    """What a saved output gave: its GPUs, driver, CPU cores, RAM and mounts."""
    gpu = facts.gpu
    gpus = tuple((g.index, g.name, g.memory_total_mib) for g in gpu.gpus) if gpu else ()
    return (
        gpus,
        gpu.driver_version if gpu else None,
        facts.cpu.physical_cores if facts.cpu else None,
        facts.memory.total_bytes if facts.memory else None,
        tuple(m.mountpoint for m in facts.mounts),
    )


def test_the_commented_docker_run_table_is_judged(tmp_path: Path) -> None:
    order = 'gpu_count: 1\nvram: 2GB\nmin_driver: "470"\n'
    got = verdicts(tmp_path, "notes.txt", (REAL / CORTEX).read_text(), order)
    assert got["gpu_count"] == ("pass", "1")
    assert got["min_driver"] == ("pass", "470.256.02")
    assert got["vram"][0] == "pass"
    wrong = verdicts(tmp_path, "notes.txt", (REAL / CORTEX).read_text(), "gpu_count: 1\nvram: 12GB\n")
    assert wrong["vram"][0] == "fail"


def test_the_capture_reads_as_its_uncommented_self(tmp_path: Path) -> None:
    text = (REAL / CORTEX).read_text()
    plain = "".join(line[2:] if line.startswith("# ") else line[1:] for line in text.splitlines(True))
    assert _read(_facts(tmp_path, "a.txt", text)) == _read(_facts(tmp_path, "a.txt", plain))
    assert _read(_facts(tmp_path, "a.txt", text))[0] == ((0, "NVIDIA GeForce ...", 1998),)


OUTPUTS = [
    "nvidia-smi__titan-v__1gpu__driver515.65.01.txt",
    "nvidia-smi__tesla-v100-sxm2-16gb__8gpu__driver550.127.05.txt",
    "nvidia-smi-q__h200__1gpu__driver580.159.04.txt",
    "nvidia-smi-query-gpu__h200__1gpu__driver580.159.04.csv",
    "nvidia-smi-L__a16__4gpu__driver470.129.04__ahv-host.txt",
    "lscpu__amd-epyc-9374f__2socket__rtx6000ada-server.txt",
    "free-b__h200-vm.txt",
    "df-P-B1__h200-vm.txt",
]


@pytest.mark.parametrize("mark", ["#", "# ", "    #", "\t# ", "// ", ";", "-- "])
@pytest.mark.parametrize("name", OUTPUTS)
def test_every_real_output_commented_out_reads_as_itself(tmp_path: Path, name: str, mark: str) -> None:
    text = (REAL / name).read_text()
    commented = "".join(mark + line for line in text.splitlines(True))
    alone = _read(_facts(tmp_path, name, text))
    assert any(alone) and _read(_facts(tmp_path, name, commented)) == alone


def test_a_block_some_of_whose_lines_carry_no_mark_is_left_as_it_is(tmp_path: Path) -> None:
    """(dmon's `# gpu   pwr` header over its unmarked rows: no comment around a block)"""
    text = (REAL / "nvidia-smi__titan-v__1gpu__driver515.65.01.txt").read_text().splitlines(True)
    mixed = "".join(("#" + line if n % 2 else line) for n, line in enumerate(text))
    assert _read(_facts(tmp_path, "t.txt", mixed))[0] != ((0, "NVIDIA TITAN V", 12288),)


MARCH = "nvidia-smi__grid-k520__1gpu__driver384.130__indented-hash-commented-tabs__march-docs.txt"


def test_an_indented_commented_table_with_tabs_is_judged(tmp_path: Path) -> None:
    """(measure37c 26: a doc's code block indents its `#`-commented table, and its runs of blanks
    became tabs: before, the banner was read and no GPU row, gpu_model/count/vram unverified)"""
    order = "gpu_model: GRID K520\ngpu_count: 1\nvram: 4GB\n"
    got = verdicts(tmp_path, "notes.txt", (REAL / MARCH).read_text(), order)
    assert got["gpu_count"] == ("pass", "1")
    assert got["gpu_model"][0] == "pass" and got["vram"][0] == "pass"
    assert _read(_facts(tmp_path, "a.txt", (REAL / MARCH).read_text()))[:2] == (
        ((0, "GRID K520", 4036),),
        "384.130",
    )


@pytest.mark.parametrize("name", OUTPUTS[:2])
def test_a_table_whose_blanks_became_tabs_reads_as_itself(tmp_path: Path, name: str) -> None:
    """(tabs for runs of blanks in every row, as `unexpand` or a page's editor writes them: the
    table's cells are parted by `|`, a tab is a blank inside them)"""
    text = (REAL / name).read_text()
    tabbed = re.sub(r" {2,}", "\t", text)
    assert _read(_facts(tmp_path, name, tabbed)) == _read(_facts(tmp_path, name, text))
