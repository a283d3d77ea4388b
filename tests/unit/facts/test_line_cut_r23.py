"""Real captures cut at a line end (cut sweep 23): a session dropped or a scroll-back that ended
between two lines leaves an output no sign of its own tells from a whole one (a `--query-gpu`
CSV's rows, `-L`'s lines, a kernel log). What the tool can know, it must use:

- A: another format of the same box that lists every GPU of the cut one and more. The CSV of
  the HPE A100 box cut after its first row, beside the box's whole table, failed gpu_count as
  "1" and passed ecc_mode "on all 1 GPUs": the narrower format was taken as the GPU set because
  it ranks higher. The set is now the widest, and the report an incomplete probe.
- B: a fault read from an output that says it is cut short (a table without its closing rows,
  a `-q` listing fewer GPUs than `Attached GPUs`) stays a fault, but its count is of what was
  read: `Disabled on all 2 GPUs` of the 3-GPU M60/P40 table, `4 x NVIDIA A30` of the 8-GPU one,
  now say so.
- C: an `nvlink -s` block cut at a line end counted the links it never listed: the V100's GPU 3
  cut after its link 3 failed as "3 of 6 links active" where 4 of 6 are.

The sweep over every real capture of every kind judges each cut beside the whole, offline (as
`invoke facts FILE` reads a saved file) and as the live probe's parser reads it."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts
from gpuonboard.errors import UsageError

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
# one box, three formats (tests/fixtures/real/SOURCES.md: HPE DL380 Gen11, 2 x A100-PCIE-40GB)
HPE = (
    "nvidia-smi__a100-pcie-40gb__2gpu__driver555.42.02.txt",
    "nvidia-smi-query-gpu__a100-pcie-40gb__2gpu__driver555.42.02.csv",
    "nvidia-smi-q-d-ecc__a100-pcie-40gb__2gpu__driver555.42.02.txt",
)
HPE_ORDER = "gpu_model: A100 40GB\ngpu_count: 2\n"


def real(name: str) -> str:
    return (REAL / name).read_text(encoding="utf-8")


def lines_of(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def judged(folder: Path, files: dict[str, str], order: str) -> dict[str, tuple[str, str]]:
    """rule -> (verdict, actual) of the files saved in one folder (one box), judged offline."""
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    (folder / "order.yml").write_text(order)
    facts = parse_facts(offline.load_outputs([str(folder / name) for name in files]))
    return {
        c.name: (c.verdict, c.actual)
        for c in offline.judge(facts, offline.load_order(str(folder / "order.yml")))
    }


# --- A: a format cut at a line end beside a whole one of the same box --------------------------


def test_a_csv_cut_after_its_first_row_beside_the_whole_table_is_no_count(tmp_path: Path) -> None:
    table, csv = real(HPE[0]), real(HPE[1])
    whole = judged(tmp_path / "whole", {HPE[0]: table, HPE[1]: csv}, HPE_ORDER)
    assert whole["gpu_count"] == ("pass", "2")
    cut = "".join(lines_of(csv)[:2])  # the header and GPU 0's row: a whole CSV to look at
    got = judged(tmp_path / "cut", {HPE[0]: table, HPE[1]: cut}, HPE_ORDER)
    verdict, actual = got["gpu_count"]
    assert verdict == "unverified", actual
    assert actual == (
        "2 listed; incomplete probe: the --query-gpu CSV lists 1 GPU(s) but the nvidia-smi table"
        " lists 2 (an output cut short, or captures of other times)"
    )
    assert got["ecc_mode"][0] == "unverified" and "all 2 GPUs" in got["ecc_mode"][1], got["ecc_mode"]


def test_every_line_cut_of_a_format_beside_another_of_its_box_is_never_a_count(tmp_path: Path) -> None:
    """Each of the HPE box's three formats, cut at every line end, judged beside each other one
    whole: gpu_count never fails, and no rule passes, fails or warns where the two whole ones do
    not."""
    moved = []
    for name in HPE:
        lines = lines_of(real(name))
        for other in (o for o in HPE if o != name):
            base = judged(tmp_path / f"{name}-{other}", {name: real(name), other: real(other)}, HPE_ORDER)
            assert base["gpu_count"] == ("pass", "2"), (name, other)
            for n in range(1, len(lines)):
                files = {name: "".join(lines[:n]), other: real(other)}
                try:
                    got = judged(tmp_path / f"{name}-{other}-{n}", files, HPE_ORDER)
                except UsageError:
                    continue  # (a few lines offline refuses with a sentence naming the file)
                for rule, (verdict, actual) in got.items():
                    was = base.get(rule, ("(no row)", ""))[0]
                    if verdict != was and verdict != "unverified":
                        moved.append(
                            f"{name}[:{n} lines] + {other}: {rule} {was} -> {verdict} ({actual[:90]})"
                        )
    assert not moved, "\n".join(moved[:10])


# --- B: a fault read from an output cut short counts the GPUs read ------------------------------

TABLE_CUTS = [
    # (capture, lines kept, rule, what the cut read)
    ("nvidia-smi__tesla-m60-p40__3gpu__driver418.240__spaces-collapsed.txt", 11, "ecc_mode", "on all 2 GPUs"),
    ("nvidia-smi__a30__8gpu__driver525.85.12__gpu3-err__no-processes.txt", 27, "gpu_model", "4 x NVIDIA A30"),
    ("nvidia-smi__a30__8gpu__driver525.85.12__gpu3-err__no-processes.txt", 27, "persistence_mode", "GPU 4"),
]


@pytest.mark.parametrize(("name", "keep", "rule", "said"), TABLE_CUTS)
def test_a_fault_of_a_table_cut_short_is_of_what_was_read(
    tmp_path: Path, name: str, keep: int, rule: str, said: str
) -> None:
    order = "gpu_model: NVIDIA A100\ngpu_count: 8\n"
    whole = verdicts(tmp_path, name, real(name), order)[rule]
    verdict, actual = verdicts(tmp_path, name, "".join(lines_of(real(name))[:keep]), order)[rule]
    assert verdict == whole[0] == ("warn" if rule == "persistence_mode" else "fail")
    assert said in actual and "incomplete probe: nvidia-smi's output lists" in actual, actual


# --- C: an nvlink -s block cut at a line end ---------------------------------------------------


def test_an_nvlink_block_cut_at_a_line_counts_only_the_links_listed(tmp_path: Path) -> None:
    name = "nvidia-smi-nvlink-s__v100-sxm2-32gb__1of-n-gpu__2-inactive.txt"
    order = "interconnect: nvlink\n"
    whole = verdicts(tmp_path, name, real(name), order)["nvlink_links"]
    assert whole[0] == "fail" and whole[1].startswith("GPU 3: 4 of 6 links active, inactive link(s) 3, 5")
    verdict, actual = verdicts(tmp_path, name, "".join(lines_of(real(name))[:5]), order)["nvlink_links"]
    assert verdict == "fail"  # (link 3 is down: a fault the cut kept)
    assert actual.startswith("GPU 3: 3 of the 4 links listed active (6 on this model), inactive link(s) 3")
