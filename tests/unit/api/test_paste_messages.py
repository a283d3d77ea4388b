"""nvidia-smi's own message lines (an infoROM warning, a GPU it could not open, its failure)
pasted through a chat or a mail that wraps them at a narrow column (24 to 48 characters, by word
or at the column) are read as the lines they were. Before, the real Azure V100 table's
`WARNING: infoROM is corrupted at gpu 0008:00:00.0` wrapped at 28-48 columns lost GPU 7's
sensor_faults warning, and the real R610 table's `Unable to determine the device handle for GPU1:
0000:34:00.0: Unknown Error` made gpu_count unverified, not failed (GPU 1 fallen off the bus)."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import Facts, parse_facts
from gpuonboard.errors import UsageError

from ..facts.smi_failures import LOST, MISMATCH, NO_MODULE, OFF_BUS
from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
# (capture, the message line in it): a table with nvidia-smi's line above or below it
TABLES = [
    (
        "nvidia-smi__rtx-pro-6000-blackwell__4gpu-1-lost__driver610.57.04.txt",
        "Unable to determine the device handle for GPU1: 0000:34:00.0: Unknown Error",
    ),
    (
        "nvidia-smi__tesla-v100-sxm2-32gb__8gpu__driver460.32.03__inforom-corrupted-gpu7__azhpc.txt",
        "WARNING: infoROM is corrupted at gpu 0008:00:00.0",
    ),
]
ORDER = "gpu_count: 4\n"


def _wrapped(line: str, width: int, by_word: bool) -> str:
    """`line` as a chat wraps it at `width`: at the last space before it, or at the column."""
    if by_word:
        return "\n".join(textwrap.wrap(line, width, break_on_hyphens=False))
    return "\n".join(line[i : i + width] for i in range(0, len(line), width))


@pytest.mark.parametrize(("name", "message"), TABLES)
def test_a_message_beside_a_table_wrapped_narrow_is_read_whole(
    tmp_path: Path, name: str, message: str
) -> None:
    """The capture with only its message line wrapped (every width from 28 to 48, by word and at
    the column; the table's lines as they are): every verdict is the capture's."""
    text = (REAL / name).read_text(encoding="utf-8")
    assert message in text
    whole = {rule: verdict for rule, (verdict, _) in verdicts(tmp_path, name, text, ORDER).items()}
    moved = []
    for width in range(28, 49):
        for by_word in (True, False):
            pasted = text.replace(message, _wrapped(message, width, by_word))
            got = {rule: verdict for rule, (verdict, _) in verdicts(tmp_path, name, pasted, ORDER).items()}
            if got != whole:
                moved.append(
                    f"{width} {'word' if by_word else 'column'}: {set(got.items()) ^ set(whole.items())}"
                )
    assert not moved, "\n".join(moved[:5])


@pytest.mark.parametrize("message", [LOST, OFF_BUS, NO_MODULE, MISMATCH])
def test_a_failure_message_wrapped_narrow_is_judged_as_the_message(tmp_path: Path, message: str) -> None:
    """nvidia-smi's failure alone in the file, wrapped at 24-48 columns: the same verdicts and
    the same quoted failure (its cause's advice) as the one line."""
    whole = verdicts(tmp_path, "nvidia-smi.txt", message + "\n", ORDER)
    moved = []
    for width in range(24, 49):
        for by_word in (True, False):
            got = verdicts(tmp_path, "nvidia-smi.txt", _wrapped(message, width, by_word) + "\n", ORDER)
            same = {rule: verdict for rule, (verdict, _) in got.items()} == {
                rule: verdict for rule, (verdict, _) in whole.items()
            }
            # (a cut right after "GPU" may read back "GPU 0000:..." for "GPU0000:...")
            quoted = got["nvidia_driver"][1].replace(" ", "") == whole["nvidia_driver"][1].replace(" ", "")
            if not (same and quoted):
                moved.append(f"{width} {'word' if by_word else 'column'}: {got['nvidia_driver']}")
    assert not moved, "\n".join(moved[:5])


# (not the GT 730's -q -x pasted after a stray backtick: a warning pasted above it moves that
# paste artefact off the paste's first line, where it is no longer one; nor a table saved under
# its own `$ kubectl logs POD` line or its own prompt (`┖[~]> nvidia-smi`): a warning above that
# line is the shell's, not the output's, api/test_offline_r33e.py)
SMI_CAPTURES = sorted(
    p.name
    for p in REAL.glob("nvidia-smi*")
    if not any(
        kind in p.name
        for kind in (
            "topo",
            "nvlink",
            "-L__",
            "stray-leading-backtick",
            "kubectl-logs-pod",
            "prompt-glyph",
            "hash-commented",  # (commented out line by line: a warning above is no line of it, round 35)
            "docker-compose-run",  # (under its own `docker-compose run` line, as kubectl-logs-pod's)
            # (round 37: under its own prompt line, `$ nvidia-smi`, `/# nvidia-smi`: a warning above
            # it is the shell's, as prompt-glyph's; integration/test_live_offline_same_box.py reads them)
            "__prompt__",
            "__pod-prompt__",
        )
    )
)


MODERN_BUS_ID = re.compile(r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]$")


@pytest.mark.parametrize("name", SMI_CAPTURES)
def test_an_inforom_warning_wrapped_above_any_format_is_read(tmp_path: Path, name: str) -> None:
    """Every real nvidia-smi table, `-q`, `-q -x` and CSV capture with nvidia-smi's infoROM
    warning for its first GPU pasted above it (edited in: the line as the V100 capture prints
    it, with this capture's address), wrapped at 36 columns by word and at the column: judged
    as with the warning whole (before, the warning was lost in every format)."""
    text = (REAL / name).read_text(encoding="utf-8")
    facts = checks_facts(tmp_path, name, text)
    if (
        facts is None
        or facts.gpu is None
        or not (buses := [g.pci_bus_id for g in facts.gpu.gpus if g.pci_bus_id])
        or not MODERN_BUS_ID.match(buses[0])
    ):
        # (the 270-era `-q` prints `0:2:0`, an address no driver's infoROM warning names)
        pytest.skip("refused whole, or no GPU address in today's form to name")
    message = f"WARNING: infoROM is corrupted at gpu {buses[0]}"
    whole = verdicts(tmp_path, name, f"{message}\n{text}")
    assert whole["sensor_faults"][0] in ("warn", "fail", "unverified")
    for by_word in (True, False):
        pasted = f"{_wrapped(message, 36, by_word)}\n{text}"
        assert verdicts(tmp_path, name, pasted) == whole, by_word


def checks_facts(tmp_path: Path, name: str, text: str) -> Facts | None:
    """The facts of `text` saved as `name` and read offline; None where offline refuses it."""
    folder = tmp_path / "facts"
    folder.mkdir()
    (folder / name).write_text(text, encoding="utf-8")
    try:
        return parse_facts(offline.load_outputs([str(folder / name)]))
    except UsageError:
        return None
