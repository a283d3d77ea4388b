"""A session's nvidia-smi command whose answer is not read says why as nvidia-smi's own words do:
its refusal of the command (`Not supported on the device(s)` / `Failed to process command line`,
api/saved_forms.py NOT_ON_DEVICE) named as one, and the output of a command whose format this tool
does not read (`nvidia-smi mig -lgi`'s table, `-i 0 -mig 1`'s answer: api/transcript.py
`part_reasons.smi_format_not_read`) said to be such a format, never "could not read what it printed", which
says a damaged output.

Found by the truth sweep, round 32 (measure32a 07, 30): keylase/nvidia-patch#89's `nvidia-smi
dmon` / `pmon` refused on a GT 640 and k8s-device-plugin#253's `nvidia-smi mig -lgi` table were
each noted as "this tool reads nvidia-smi's output but could not read what it printed"."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.errors import UsageError

SESSIONS = Path(__file__).parents[2] / "fixtures" / "sessions"
DMON = (
    SESSIONS / "transcript__nvidia-smi-dmon+pmon-NOT-SUPPORTED+nvidia-smi-CUT__gt640-415__nvidia-patch-89.txt"
)
MIG_LGI = (
    SESSIONS
    / "transcript__nvidia-smi-L-mig+nvidia-smi-mig-lgi-CUT__a100-pcie-40gb__k8s-device-plugin-253.txt"
)
DAMAGED = "could not read what it printed"
NOT_READ = "its output is a format this tool does not read"


def _notes(path: Path) -> str:
    notes: list[str] = []
    offline.load_outputs([str(path)], notes)
    return " ".join(notes)


def test_nvidia_smi_s_refusal_of_dmon_and_pmon_is_named_as_its_refusal() -> None:
    """The GT 640 session: its table is read, and each of dmon and pmon is noted as nvidia-smi's
    refusal of that command, quoting it."""
    said = _notes(DMON)
    assert DAMAGED not in said, said
    for line, command in ((1, "dmon"), (5, "pmon")):
        assert (
            f"line {line} (`nvidia-smi {command}`): nvidia-smi's refusal of `nvidia-smi {command}` (`Not"
            " supported on the device(s)`): this GPU or driver does not support that command"
        ) in said, said


def test_a_mig_lgi_table_is_a_format_not_read() -> None:
    """The A100 session: `-L` is read, and the `mig -lgi` table is noted as a format this tool does
    not read."""
    said = _notes(MIG_LGI)
    # (round 33: a MIG list is named, as dmon / pmon samples are)
    assert (
        "line 12 (`nvidia-smi mig -lgi`): an `nvidia-smi mig -lgi` list of the GPU instances of GPU 0" in said
    ), said
    assert DAMAGED not in said


@pytest.mark.parametrize(
    ("command", "output", "said"),
    [
        # nvidia-smi's operations and subcommands not read: their answers are of a format not read
        ("sudo nvidia-smi -i 0 -mig 1", "Enabled MIG Mode for GPU 00000000:36:00.0\nAll done.\n", NOT_READ),
        ("nvidia-smi -pm 1", "Enabled persistence mode for GPU 00000000:01:00.0.\nAll done.\n", NOT_READ),
        ("nvidia-smi vgpu", "No supported devices in vGPU mode\n", NOT_READ),
        # a command whose output is read, that printed what no reader recognises: as before
        ("nvidia-smi -q -d ECC", "Hello world\n", DAMAGED),
        ("nvidia-smi topo -m", "Hello world\n", DAMAGED),
        # its refusal of a command, alone or after its reason
        ("nvidia-smi pmon -c 1", "Not supported on the device(s)\nFailed to process command line\n",
         "nvidia-smi's refusal of `nvidia-smi pmon -c 1` (`Not supported on the device(s)`)"),
        ("nvidia-smi dmon -s x", "Failed to process command line\n",
         "nvidia-smi's refusal of the command line it was given (`Failed to process command line`)"),
    ],
)  # fmt: skip
def test_each_unread_nvidia_smi_command_is_said_as_what_it_printed(
    tmp_path: Path, command: str, output: str, said: str
) -> None:
    """Each beside a table that is read (the GT 640's): its note as nvidia-smi's answer says."""
    table = DMON.read_text().split("# nvidia-smi\n", 1)[1]
    session = tmp_path / "session.txt"
    session.write_text(f"$ {command}\n{output}$ nvidia-smi\n{table}")
    assert said in _notes(session)


def test_a_file_of_the_refusal_alone_is_refused_naming_it(tmp_path: Path) -> None:
    """The refusal saved alone under its command: refused, naming nvidia-smi's refusal."""
    saved = tmp_path / "dmon.txt"
    saved.write_text("$ nvidia-smi dmon\nNot supported on the device(s)\nFailed to process command line\n")
    with pytest.raises(UsageError) as refused:
        offline.load_outputs([str(saved)])
    assert str(refused.value).startswith(
        f"{saved}: nvidia-smi's refusal of `nvidia-smi dmon` (`Not supported on the device(s)`)"
    )
