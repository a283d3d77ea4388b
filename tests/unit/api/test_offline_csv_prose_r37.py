"""A `--query-gpu` CSV among lines of prose (a README's `CPU Cores: 176` / `RAM: 718Gi` above its
header, `Minimum Disk Space: 1TB` below; an ENV.md's `CPU 核数: 24` under its rows): the CSV block
is read and the prose said not read (api/heading_above.py csv_among_prose). Before, the file
"listed no GPU (output not recognised as any nvidia-smi format)" with "nvidia-smi answered", of a
file (measure37c 14): model, count and memory unverified."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.steps.checks.gpu_rules import rule_driver

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
README = "nvidia-smi-query-gpu__h200__4gpu__among-readme-prose-cpu-ram-disk-lines__vllm-repro-readme.txt"
ENV_MD = "nvidia-smi-query-gpu__h200__2gpu__driver575.57.08__prose-lines-below__pbs-env-md.txt"


@pytest.mark.parametrize(("name", "count"), [(README, "4"), (ENV_MD, "2")])
def test_the_csv_among_prose_is_read_but_passes_nothing(tmp_path: Path, name: str, count: str) -> None:
    """Read (its rows listed), but no copied command stands above it: a document may quote a CSV (a
    spec, an offer, a wish list), so model, count and memory are at most unverified, said why
    (review revT F2: before, they passed, and a count short of the order failed)."""
    order = f"gpu_model: H200\ngpu_count: {count}\nvram: 141GB\n"
    got = verdicts(tmp_path, "hardware.txt", (REAL / name).read_text(), order)
    for rule in ("gpu_model", "gpu_count", "vram"):
        assert got[rule][0] == "unverified", got[rule]
        assert (
            "a CSV quoted among prose: save `nvidia-smi --query-gpu ...` of the box by itself" in got[rule][1]
        )
    assert got["gpu_count"][1].startswith(f"{count} listed")
    wrong = verdicts(tmp_path, "hardware.txt", (REAL / name).read_text(), "gpu_count: 8\n")
    assert wrong["gpu_count"][0] == "unverified"


# the review's vendor mail (a test input, revT d3): the server "we will hand over", as a CSV
_MAIL = """Dear customer,

your order #4471 is ready. The server we will hand over next week is specified as:

index, name, memory.total [MiB]
{rows}

Credentials will follow in a separate mail.
"""


def test_a_vendors_mail_quoting_a_csv_passes_no_gpu_rule(tmp_path: Path) -> None:
    rows = "\n".join(f"{i}, NVIDIA A100-SXM4-80GB, 81920 MiB" for i in range(8))
    order = "gpu_model: A100 80GB SXM\ngpu_count: 8\nvram: 80GB\n"
    got = verdicts(tmp_path, "delivery-mail.txt", _MAIL.format(rows=rows), order)
    assert {rule: got[rule][0] for rule in ("gpu_model", "gpu_count", "vram")} == dict.fromkeys(
        ("gpu_model", "gpu_count", "vram"), "unverified"
    ), got


def test_a_csv_under_its_copied_command_among_prose_is_the_boxs(tmp_path: Path) -> None:
    """The README's CSV with its command line right above its header (edited in-test): the box's
    answer, judged as before."""
    command = "nvidia-smi --query-gpu=index,name,memory.total --format=csv"
    text = (REAL / README).read_text().replace("index, name", f"{command}\nindex, name")
    got = verdicts(tmp_path, "hardware.txt", text, "gpu_model: H200\ngpu_count: 4\nvram: 141GB\n")
    assert got["gpu_count"] == ("pass", "4")
    assert got["gpu_model"][0] == "pass" and got["vram"][0] == "pass"


def test_a_csv_whose_row_runs_on_into_a_line_is_not_read_from_among_prose(tmp_path: Path) -> None:
    """(edited in-test: a line of no comma right under a row, no blank between, may be the row's
    wrapped rest: no block is read)"""
    text = (REAL / README).read_text().replace("143771 MiB\n\nMinimum", "143771 MiB\nMinimum")
    got = verdicts(tmp_path, "hardware.txt", text, "gpu_count: 4\n")
    assert got["gpu_count"][0] == "unverified"


def test_a_text_of_no_nvidia_smi_form_is_never_said_to_have_answered() -> None:
    facts = parse_facts({"nvidia_smi": ProbeOutput("CPU Cores: 176\nRAM: 718Gi\n", "", 0)})
    check = rule_driver(facts)
    assert check.verdict == "unverified"
    assert "answered" not in check.actual and "not recognised as any nvidia-smi format" in check.actual
