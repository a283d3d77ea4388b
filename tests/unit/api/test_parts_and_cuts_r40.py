"""Round 40 (measure40a 10, 16; measure40b 05, 16): parts of nvidia-smi's outputs pasted alone are
named as parts, and a table cut before its process list or its `MIG devices:` rows says so.

- a section of `nvidia-smi -q -x` alone (its element and its children, `<clocks_event_reasons>`
  with its `<clocks_event_reason_*>`) was "not a recognised command output": the fragment
  sentence needed three of the record's own element names;
- the Processes records of a `-q` block alone (WSL2's C+G records) likewise;
- a table pasted down to its GPU's closing border (no Processes section) warned "no process
  listed" on a desktop's GPU: its list is in the part cut away (unverified);
- a MIG-mode GPU's table (its ECC cell `On`) cut inside the GPU's rows said "nvidia-smi did not
  report ECC error counts": they are on the `MIG devices:` rows, in the part cut away."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.errors import UsageError

from ..offline_judge import checks, verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
XML_SECTION = "part-of-nvidia-smi-q-x__clocks-event-reasons-section-alone-cut__l20-hygon__1panel-10990.xml"
Q_PROCESSES = (
    "part-of-nvidia-smi-q__processes-records-alone-cg-wddm-cut__wsl2-driver465.42__nvidia-docker-1458.txt"
)
AT_BORDER = (
    "nvidia-smi__geforce-rtx-4080__1gpu__driver551.61__windows-wddm__display-on-1620mib__fenced-cut-at-gpu-border"
    "__nerfstudio-2930.txt"
)
MIG_CUT = (
    "nvidia-smi__h100-pcie-mig-ecc-cell-on__1gpu__driver570.124.06__prompt"
    "__cut-in-gpu0-second-row__sonar-247.txt"
)
XML_RECORDS = sorted(REAL.glob("nvidia-smi-q-x__*.xml"))
# whole tables of one GPU that drives a display (`On` after its bus id), with memory held
DESKTOPS = [
    "nvidia-smi__geforce-rtx-2080-super__1gpu__driver610.62__windows-wddm.txt",
    "nvidia-smi__geforce-rtx-3090__1gpu__driver470.76__wsl-smi470.28__util-err__display-on.txt",
    "nvidia-smi__geforce-rtx-4080-super__1gpu__driver595.71.05__idle.txt",
]
# whole tables of GPUs in MIG mode (`On` in the ECC cell, `Enabled` under it)
MIG_TABLES = [
    "nvidia-smi__a100-sxm4-40gb__8gpu__driver450.80.02__7-mig.txt",
    "nvidia-smi__a100-80gb-pcie-mig__1gpu__driver550.54.14__cuda-na__oc-exec-driver-daemonset__k8s-dra-driver.txt",
]


def _refusal(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(UsageError) as err:
        offline.load_outputs([str(path)])
    return str(err.value)


def test_a_q_x_section_alone_is_named_a_part_of_q_x(tmp_path: Path) -> None:
    said = _refusal(tmp_path, XML_SECTION, (REAL / XML_SECTION).read_text())
    assert "elements of `nvidia-smi -q -x` from inside a GPU's record" in said, said
    assert "not a recognised command output" not in said


@pytest.mark.parametrize("section", ["ecc_errors", "retired_pages", "temperature", "fb_memory_usage"])
def test_each_section_of_a_real_q_x_record_alone_is_named_a_part(tmp_path: Path, section: str) -> None:
    """The section's element with its children, cut out of each real `-q -x` record holding it
    with three elements or more (a one-line `<remapped_rows>N/A</remapped_rows>` names nothing)."""
    cut = 0
    for path in XML_RECORDS:
        text = path.read_text(errors="replace")
        found = re.search(rf"^[ \t]*<{section}>.*?</{section}>\n", text, re.S | re.M)
        if found is None or len(set(re.findall(r"<(\w+)>", found.group(0)))) < 3:
            continue
        (tmp_path / path.stem).mkdir()
        said = _refusal(tmp_path / path.stem, "part.xml", found.group(0))
        assert "elements of `nvidia-smi -q -x` from inside a GPU's record" in said, (path.name, said)
        cut += 1
    assert cut >= 3


def test_the_processes_records_of_a_q_block_alone_are_named_a_part_of_q(tmp_path: Path) -> None:
    said = _refusal(tmp_path, Q_PROCESSES, (REAL / Q_PROCESSES).read_text())
    assert "lines of `nvidia-smi -q` from inside a GPU's block" in said, said


def test_a_real_q_processes_section_alone_is_named_a_part_of_q(tmp_path: Path) -> None:
    """The Processes section of real `-q` blocks (from its first record's `GPU instance ID` on)."""
    named = 0
    for path in sorted(REAL.glob("nvidia-smi-q__*.txt")):
        text = path.read_text(errors="replace")
        at = re.search(r"^[ \t]*GPU instance ID[ \t]*:.*\n(?:.*\n){5}", text, re.M)
        if at is None or "Process ID" not in at.group(0):
            continue
        (tmp_path / path.stem).mkdir()
        said = _refusal(tmp_path / path.stem, "part.txt", at.group(0))
        assert "lines of `nvidia-smi -q` from inside a GPU's block" in said, (path.name, said)
        named += 1
    assert named >= 2


def _foreign(tmp_path: Path, name: str, text: str) -> tuple[str, str]:
    return verdicts(tmp_path, name, text)["foreign_processes"]


def test_a_desktop_table_cut_at_its_gpu_border_has_its_process_list_cut_away(tmp_path: Path) -> None:
    verdict, actual = _foreign(tmp_path, AT_BORDER, (REAL / AT_BORDER).read_text())
    assert verdict == "unverified", actual
    assert "its process list may be in the part cut away" in actual
    assert "no process listed" not in actual


@pytest.mark.parametrize("name", DESKTOPS)
def test_a_real_desktop_table_cut_after_its_gpu_rows_never_says_no_process_listed(
    tmp_path: Path, name: str
) -> None:
    """Each whole table of a display's GPU, cut at the border under its GPU rows (before the
    Processes section): unverified, for the cut (or, a WSL2 guest's, for the guest: its figures
    count the Windows host's own use, round 40's sess fix), never a desktop's warn."""
    lines = (REAL / name).read_text().splitlines(keepends=True)
    title = next(i for i, line in enumerate(lines) if "Processes:" in line)
    border = max(i for i in range(title) if lines[i].lstrip().startswith("+-"))
    verdict, actual = _foreign(tmp_path, name, "".join(lines[: border + 1]))
    assert verdict == "unverified", (name, actual)
    assert "part cut away" in actual or "on a WSL2 guest" in actual, (name, actual)


def _ecc(tmp_path: Path, name: str, text: str) -> str:
    found = {c.name: c for c in checks(tmp_path, name, text)}["ecc_uncorrectable"]
    assert found.verdict == "unverified", found
    return f"{found.actual} {found.detail}"


def test_a_mig_gpu_cut_in_its_second_row_says_its_counts_are_in_the_part_cut_away(tmp_path: Path) -> None:
    said = _ecc(tmp_path, MIG_CUT, (REAL / MIG_CUT).read_text())
    assert "GPU 0 is in MIG mode, where the table gives each slice's volatile uncorrectable ECC count" in said
    assert "did not report" not in said


@pytest.mark.parametrize("name", MIG_TABLES)
def test_a_real_mig_table_cut_in_its_first_mig_gpu_s_second_row_names_the_mig_rows_cut(
    tmp_path: Path, name: str
) -> None:
    lines = (REAL / name).read_text().splitlines(keepends=True)
    # (the first GPU whose ECC cell reads `On`: in MIG mode)
    first = next(i for i, line in enumerate(lines) if re.match(r"^\|\s+\d+\s+\S.*\|\s+On \|$", line.rstrip()))
    said = _ecc(tmp_path, name, "".join(lines[: first + 1]) + lines[first + 1][:6] + "\n")
    assert "is in MIG mode, where the table gives each slice's volatile uncorrectable ECC count" in said, said
