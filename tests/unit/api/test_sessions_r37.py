"""Round 37 (measure37a, c, d, e): sessions and where an output came from: a command's output
carried on one line with its exit code (`rc=255   Failed ...`, `nvidia-smi returncode=15;
stdout=...`), ..."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import exit_labelled, offline
from gpuonboard.api.unread import ONE_PER_COMMAND
from gpuonboard.api.unread_files import unread_rows
from gpuonboard.errors import UsageError

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
RC_PREFIXED = (
    REAL
    / "session__rc255-before-each-answer__nvml-unknown-error-query-gpu-and-list-gpus__win-audit-notes.txt"
)
RECORD = REAL / "session__harness-record-returncode-15-stdout__nvidia-smi-gpu-is-lost-c3__citylbm-notes.txt"

NVML = "Failed to initialize NVML: Unknown Error"
LOST = (
    "Unable to determine the device handle for GPU0000:C3:00.0: GPU is lost."
    "  Reboot the system to recover this GPU"
)
HAS_FAILED = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
    " Make sure that the latest NVIDIA driver is installed and running."
)


@pytest.mark.parametrize(
    ("path", "said"),
    [(RC_PREFIXED, "Failed to initialize NVML"), (RECORD, "GPU is lost")],
    ids=["rc", "record"],
)
def test_an_output_recorded_beside_its_exit_code_is_read_as_nvidia_smis_failure(
    tmp_path: Path, path: Path, said: str
) -> None:
    """`rc=255   Failed to initialize NVML: Unknown Error` below each of two `$ nvidia-smi ...`
    (a writer's status before the answer), and a harness's `nvidia-smi returncode=15;
    stdout=Unable to determine ... GPU is lost ...`: nvidia_driver FAIL on what nvidia-smi said
    (was: refused, exit 2, "could not read what it printed" / "a copied command line ... with no
    output below it")."""
    got = verdicts(tmp_path, "saved.txt", path.read_text(), "gpu_count: 1\n")
    assert got["nvidia_driver"][0] == "fail", got["nvidia_driver"]
    assert said in got["nvidia_driver"][1], got["nvidia_driver"]
    assert got["gpu_count"][0] == "unverified", got["gpu_count"]


# the class: the record's other spellings (`output=`, a stderr beside an empty stdout, `rc=N:`),
# each around nvidia-smi's own answers
SHAPES = [
    ("$ nvidia-smi\nrc=9   " + HAS_FAILED + "\n", HAS_FAILED),
    ("$ nvidia-smi -L\nrc=255: " + NVML + "\n", NVML),
    ("nvidia-smi returncode=9 output=" + HAS_FAILED + "\n", HAS_FAILED),
    ("nvidia-smi returncode=15; stdout=; stderr=" + LOST + "\n", "GPU is lost"),
    ("nvidia-smi exit_code=255, stdout=" + NVML + "\n", NVML),
]


@pytest.mark.parametrize(("text", "said"), SHAPES, ids=range(len(SHAPES)))
def test_every_shape_of_an_exit_code_record_reads_the_output_it_carries(
    tmp_path: Path, text: str, said: str
) -> None:
    got = verdicts(tmp_path, "saved.txt", text, "gpu_count: 1\n")
    assert got["nvidia_driver"][0] == "fail", got["nvidia_driver"]
    assert said[:40] in got["nvidia_driver"][1], got["nvidia_driver"]


@pytest.mark.parametrize(
    "line",
    [
        "rc=0 errno=5 done",  # a key=value log line
        "[  12.5] nvidia: rc=255   probe failed",  # a kernel line that holds the words
        "exit 0",  # a typed command
        "returncode=0",  # a status alone: no output recorded
    ],
)
def test_a_line_that_records_no_output_is_left_as_it_is(line: str) -> None:
    assert exit_labelled.unlabelled(line) == line


DGPU = REAL / "session__nvidia-smi-display-on-dgpu__rtx4070-580.65.06__carteakey-blog.txt"
IGPU = REAL / "session__nvidia-smi-display-on-igpu__rtx4070-580.65.06__carteakey-blog.txt"


def test_two_files_of_one_command_taken_at_two_times_say_what_can_be_done(tmp_path: Path) -> None:
    """One box's `nvidia-smi`, the display on the dGPU and then on the iGPU, one file each: refused
    saying that one output of each command is judged and what to do, pass the one to judge or run
    each by itself (was: "pass one file per command", which they were)."""
    (tmp_path / "session.txt").write_text(DGPU.read_text())
    (tmp_path / "session-igpu.txt").write_text(IGPU.read_text())
    with pytest.raises(UsageError) as refused:
        offline.load_outputs([str(tmp_path)], [])
    said = str(refused.value)
    assert "pass one file per command" not in said, said
    assert ONE_PER_COMMAND in said and "session-igpu.txt" in said, said


LSPCI = REAL / "lspci-nn__grep-nvidia-4x-v100-dgxs-gpu-08-rev-ff__dgx-station-notes.txt"
DETECT_VIRT = REAL / "systemd-detect-virt__oracle__virtualbox-lab-report.txt"
# nvidia-smi's answer to a drain (`nvidia-smi drain -p ... -m 1`), as a blog's session printed it
DRAIN = "Successfully set GPU 00000000:C2:00.0 drain state to: draining.\n"
NO_NVLINK_TABLE = REAL / "nvidia-smi__geforce-rtx-3050-4gb-laptop__1gpu__driver531.88__windows-tcc-wddm.txt"


@pytest.mark.parametrize("in_folder", [True, False], ids=["folder", "files"])
def test_a_file_of_another_kind_is_never_said_to_hold_a_kernel_log_or_nvlink(
    tmp_path: Path, in_folder: bool
) -> None:
    """An `lspci -nn` listing, `oracle` and a drain's answer beside a table of a GPU without
    NVLink, in a folder or each named: no gpu_xid, nvswitch_sxid or NVLink row (was: each said
    the files "could not be read ... may hold the output this rule reads ... save it again")."""
    (tmp_path / "nvidia-smi.txt").write_text(NO_NVLINK_TABLE.read_text())
    (tmp_path / "lspci.txt").write_text(LSPCI.read_text())
    (tmp_path / "systemd-detect-virt.txt").write_text(DETECT_VIRT.read_text())
    (tmp_path / "drain.txt").write_text(DRAIN)
    paths = [str(tmp_path)] if in_folder else [str(p) for p in sorted(tmp_path.iterdir())]
    unread: list[Path] = []
    other: list[Path] = []
    held: dict[Path, set[str]] = {}
    raw = offline.load_outputs(paths, [], unread, other, held)
    assert len(unread) == 3, unread
    assert unread_rows(unread, raw, set(), other, held) == []


def test_a_text_file_with_a_kernel_line_may_still_hold_the_log(tmp_path: Path) -> None:
    """The same listing with one NVRM line among its lines, saved under a name that says no kind:
    the file may hold a kernel log, so
    gpu_xid and nvswitch_sxid stay unverified naming it (no NVLink row: no link line in it)."""
    (tmp_path / "nvidia-smi.txt").write_text(NO_NVLINK_TABLE.read_text())
    (tmp_path / "notes.txt").write_text(
        LSPCI.read_text() + "NVRM: GPU at PCI:0000:08:00: GPU-1c2f4d6e-0000-0000-0000-000000000000\n"
    )
    unread: list[Path] = []
    other: list[Path] = []
    raw = offline.load_outputs([str(tmp_path)], [], unread, other, {})
    rows = {row.name for row in unread_rows(unread, raw, set(), other, {})}
    assert rows == {"gpu_xid", "nvswitch_sxid"}, rows


WHICH = REAL / "session__which-nvidia-smi-wsl-shim-path-commented__rtx4080-laptop-581.57__kr-wsl2-notes.txt"


def test_which_nvidia_smi_answered_a_path_is_no_copied_command(tmp_path: Path) -> None:
    """`$ which nvidia-smi` answered `/usr/lib/wsl/lib/nvidia-smi     # ← ...`: said not read,
    never "a copied command line ... with no output below it" (measure37e 07); the table read."""
    notes: list[str] = []
    outputs = offline.load_outputs([str(WHICH)], notes)
    said = " ".join(notes)
    assert "line 10 (`which nvidia-smi`) is not an output this tool reads" in said, said
    assert "no output below it" not in said, said
    assert "nvidia_smi_table" in outputs


@pytest.mark.parametrize(
    ("command", "answer"),
    [
        ("which nvidia-smi", "/usr/bin/nvidia-smi"),
        ("type nvidia-smi", "nvidia-smi is /usr/bin/nvidia-smi"),
        ("command -v dmesg", "/usr/bin/dmesg"),
        ("whereis lscpu", "lscpu: /usr/bin/lscpu /usr/share/man/man1/lscpu.1.gz"),
        ("readlink -f $(which nvidia-smi)", "/usr/lib/wsl/lib/nvidia-smi"),
    ],
)
def test_a_command_that_says_where_a_tool_is_is_not_its_output(
    tmp_path: Path, command: str, answer: str
) -> None:
    path = tmp_path / "session.txt"
    path.write_text(f"$ {command}\n{answer}\n$ nvidia-smi -L\n{LIST}\n")
    notes: list[str] = []
    offline.load_outputs([str(path)], notes)
    said = " ".join(notes)
    assert f"line 1 (`{command}`) is not an output this tool reads" in said, said


LIST = "GPU 0: NVIDIA GeForce RTX 4080 Laptop GPU (UUID: GPU-1c2f4d6e-0000-0000-0000-000000000000)"


MASKED = REAL / "session__masked-user-prompt-conda-base__df-h-nvidia-smi-2x3090-470.57__cn-linux-notes.txt"


def test_a_prompt_whose_login_is_masked_is_a_prompt() -> None:
    """`(base) ***:~$ mkdir happy` is the session's first prompt: no "text above its first
    prompt" quoting it (measure37c 01); `df -h` and `nvidia-smi` read under theirs."""
    notes: list[str] = []
    outputs = offline.load_outputs([str(MASKED)], notes)
    said = " ".join(notes)
    assert "above its first prompt" not in said and "line 4 (`ls`)" in said, said
    assert {"df", "nvidia_smi_table"} <= set(outputs), outputs.keys()


@pytest.mark.parametrize("login", ["xxx@***", "<user>@<host>", "root@***", "XXXX", "<user>"])
def test_every_masked_login_shape_starts_a_command(tmp_path: Path, login: str) -> None:
    """The same session under the other ways a poster masks a login."""
    path = tmp_path / "session.txt"
    path.write_text(MASKED.read_text().replace("(base) ***:", f"{login}:"))
    notes: list[str] = []
    outputs = offline.load_outputs([str(path)], notes)
    assert "above its first prompt" not in " ".join(notes), notes
    assert {"df", "nvidia_smi_table"} <= set(outputs), outputs.keys()
