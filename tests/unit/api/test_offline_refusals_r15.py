"""The refusals added in round 15, each as the command line says it: exit 2 and one whole
sentence naming the file, what it is and what to save (public captures,
tests/fixtures/public/SOURCES.md, "Forms read in another form")."""

from __future__ import annotations

from pathlib import Path

import pytest

from .test_offline_refusals_r13 import refused

PUBLIC = Path(__file__).parents[2] / "fixtures" / "public"


@pytest.mark.parametrize(
    ("name", "sentence"),
    [
        (
            "lscpu-e__i7-6700-4c8t__notes.txt",
            "`lscpu -e` / `lscpu -p` (one line per CPU), which this tool does not read: save plain `lscpu`"
            " of the box.",
        ),
        (
            "lscpu-grep__online-offline-lines__notes.txt",
            "an `lscpu` without its first lines (a `grep` of it, or a paste of some lines), which this tool"
            " does not read: save the whole `lscpu` of the box.",
        ),
        # (the a100 fragment with its ERR! GPU is read since round 33: test_saved_forms_table_part_faults.py)
        (  # (its column header there: only the banner missing, m31c 19)
            "nvidia-smi-fragment__l4__column-header-no-banner__cut-after-gpu0__pubsec-655.txt",
            "part of nvidia-smi's table (GPU rows and their column header, without its `NVIDIA-SMI` banner),"
            " so the driver and the number of GPUs are not known: save the whole `nvidia-smi` output.",
        ),
    ],
)
def test_each_refusal_is_one_sentence_and_exit_2(tmp_path: Path, name: str, sentence: str) -> None:
    path = tmp_path / name
    path.write_text((PUBLIC / name).read_text())
    assert refused(path) == f"error: {path}: {sentence}"
