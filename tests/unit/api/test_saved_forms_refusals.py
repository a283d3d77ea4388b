"""Saved files that hold no output of the box, refused (exit 2) in one sentence that says what
they are (api/saved_forms.py `without_kind`): nvidia-smi's refusal of its own command line, before
it reads any GPU (Windows' nvidia-smi has no `topo`; a `--query-gpu` field the driver does not
know), and an empty file. Each was refused as "not a recognised command output", listing every
format this tool reads. Real captures: tests/fixtures/real/SOURCES.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.errors import UsageError

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
USAGE_ERRORS = [
    "nvidia-smi-usage-error__topo-m-on-windows__geforce-rtx-2080-super__driver591.86.txt",
    "nvidia-smi-usage-error__query-gpu-cuda_version__geforce-rtx-3090__driver580.105.08.txt",
]


@pytest.mark.parametrize("capture", USAGE_ERRORS)
def test_nvidia_smis_refusal_of_its_command_line_is_said_so(tmp_path: Path, capture: str) -> None:
    text = (REAL / capture).read_text(encoding="utf-8")
    with pytest.raises(UsageError) as refused:
        verdicts(tmp_path, capture, text, "gpu_model: RTX 3090\n")
    said = str(refused.value)
    assert f"nvidia-smi's refusal of the command line it was given (`{text.strip()}`)" in said
    assert "not a recognised command output" not in said


def test_a_usage_error_in_a_saved_session_is_noted_and_the_rest_judged(tmp_path: Path) -> None:
    """The RTX 3090 report's refused query under its prompt line, `nvidia-smi -L` after it (edit:
    both in one saved session): the refusal is not read, the listing is."""
    refused = (REAL / USAGE_ERRORS[1]).read_text(encoding="utf-8")
    text = (
        "$ nvidia-smi --query-gpu=driver_version,cuda_version --format=csv,noheader\n"
        f"{refused}\n$ nvidia-smi -L\n"
        "GPU 0: NVIDIA GeForce RTX 3090 (UUID: GPU-00000000-0000-0000-0000-000000000000)\n"
    )
    assert verdicts(tmp_path, "session.txt", text, "gpu_model: RTX 3090\n")["gpu_model"][0] == "pass"


def test_an_empty_file_is_refused_as_empty(tmp_path: Path) -> None:
    """leptonai/gpud's `nvidia-smi.nvlink.status.a10` (an A10 box's `nvlink -s`, which printed
    nothing) is an empty file: nothing in it names the command, so it is refused, saying so."""
    with pytest.raises(UsageError, match=r"nvlink-s\.txt: an empty file, which holds no command output"):
        verdicts(tmp_path, "nvlink-s.txt", "", "gpu_model: A10\n")


@pytest.mark.parametrize(
    ("capture", "said"),
    [
        # k8s-vgpu-scheduler#25: 30 lines from inside a V100's `-q` block (Serial Number to PCIe)
        (
            "part-of-nvidia-smi-q__tesla-v100-block-lines-no-header__k8s-vgpu-scheduler-25.txt",
            "lines of `nvidia-smi -q` from inside a GPU's block, without the header above them",
        ),
        # DeepSpeed-MII#198: the table's Processes section, the banner and GPU rows left out
        (
            "part-of-nvidia-smi__processes-only__8-python__no-banner-no-gpu-rows__deepspeed-mii-198.txt",
            "the Processes section of nvidia-smi's table alone, without its banner and GPU rows",
        ),
    ],
)
def test_a_part_of_nvidia_smi_naming_no_gpu_set_is_said_so(tmp_path: Path, capture: str, said: str) -> None:
    """A part of an nvidia-smi output that names no driver and no GPU set is refused in one
    sentence naming what it is and what to save (was: "not a recognised command output", listing
    every format, the `-q` among them)."""
    with pytest.raises(UsageError) as refused:
        verdicts(tmp_path, capture, (REAL / capture).read_text(encoding="utf-8"), "gpu_count: 8\n")
    assert said in str(refused.value) and "save the whole `nvidia-smi" in str(refused.value)
    assert "not a recognised command output" not in str(refused.value)


@pytest.mark.parametrize(
    ("capture", "cpu"),
    [
        ("proc-cpuinfo__ibm-z-s390x-8561__4cpu__ohai.txt", "an IBM Z (s390x) CPU"),
        ("proc-cpuinfo__armv7-st-ericsson-mop500__2cpu__hwloc.txt", "a 32-bit ARM CPU"),
    ],
)
def test_a_cpuinfo_this_tool_does_not_count_is_said_so(tmp_path: Path, capture: str, cpu: str) -> None:
    """A /proc/cpuinfo of IBM Z or 32-bit ARM is refused naming its CPU and what to save (was:
    "not a recognised command output", listing "/proc/cpuinfo" among the expected forms)."""
    with pytest.raises(UsageError) as refused:
        verdicts(tmp_path, capture, (REAL / capture).read_text(encoding="utf-8"), "cpu_cores: 4\n")
    said = str(refused.value)
    assert f"a /proc/cpuinfo of {cpu}, a form this tool does not read" in said and "save `lscpu`" in said
    assert "not a recognised command output" not in said


PARTS = [
    (
        "part-of-nvidia-smi-q__no-header-bar1-to-temp__nvidia-docker-1070.txt",
        "lines of `nvidia-smi -q` from inside a GPU's block, without the header above them",
    ),
    (  # (two known sections among others: not "those sections alone", m31c 11)
        "part-of-nvidia-smi-q__power-limit-to-processes__clocks-sections__a100__nvidia-docker-1648.txt",
        "lines of `nvidia-smi -q` from inside a GPU's block, without the header above them",
    ),
    (
        "part-of-nvidia-smi__mig-devices-only__a100-40gb__nvitop-8.txt",
        "the MIG devices section of nvidia-smi's table alone, without its banner and GPU rows",
    ),
]


@pytest.mark.parametrize(("capture", "part"), PARTS)
def test_a_part_of_nvidia_smis_output_is_named_as_such(tmp_path: Path, capture: str, part: str) -> None:
    """nvidia-docker#1070's `-q` lines from BAR1 to Temperature (only 2 of the block keys known
    before: Compute Mode, Retired Pages) and nvitop#8's `MIG devices:` table alone were refused
    with the generic "not a recognised command output" list."""
    with pytest.raises(UsageError) as refused:
        verdicts(tmp_path, capture, (REAL / capture).read_text(encoding="utf-8"), "gpu_count: 2\n")
    said = str(refused.value)
    assert part in said and "save the whole `nvidia-smi" in said
    assert "not a recognised command output" not in said


REMAPPED_ROWS_ALONE = (
    "part-of-nvidia-smi-q__remapped-rows-section-alone-pending-yes-4-uncorrectable__gpud-80.txt"
)


def test_a_q_section_alone_is_named_with_the_fault_it_shows(tmp_path: Path) -> None:
    """leptonai/gpud#80's `nvidia-smi -q` fragment, its `Remapped Rows` section alone (4
    uncorrectable, Pending: Yes), which only one known block key marked: it was refused with the
    generic "not a recognised command output (expected ...)" list. It is a part of one GPU's -q
    record with no GPU, driver or count, so it is refused in one sentence naming the section and
    the fault it shows, and what to save."""
    with pytest.raises(UsageError) as refused:
        verdicts(
            tmp_path,
            "nvidia-smi-q.txt",
            (REAL / REMAPPED_ROWS_ALONE).read_text(encoding="utf-8"),
            "gpu_count: 1\n",
        )
    said = str(refused.value)
    assert "the Remapped Rows section of an `nvidia-smi -q` GPU block alone" in said
    assert "it shows Uncorrectable Error 4, Pending Yes, a fault of the GPU it was copied from" in said
    assert (
        said.endswith("save the whole `nvidia-smi -q` output.")
        and "not a recognised command output" not in said
    )


FAICHOU = "lscpu-line-breaks-lost__xeon-e5-2660-v2__2socket__then-lscpu-e-cut__faichou-blog.txt"


def test_an_lscpu_whose_line_breaks_were_lost_is_said_so(tmp_path: Path) -> None:
    """faichou.com's page of `lscpu` (2 x Xeon E5-2660 v2) as stored: a heading, then the
    prompt line and every field on one long line (`root@debian:~# lscpuArchitecture: x86_64 CPU
    op-mode(s): ...`), a flattened `lscpu -e` after it. Refused, as before, but said as what it
    is: it was "a CSV without its header row ... nvidia-smi --query-gpu"."""
    text = (REAL / FAICHOU).read_text(encoding="utf-8")
    with pytest.raises(UsageError) as refused:
        verdicts(tmp_path, "lscpu.txt", text, "cpu_cores: 20\n")
    said = str(refused.value)
    assert "an lscpu output whose line breaks were lost" in said
    assert "CSV" not in said


CBIO = "top-summary-mem-swap__264gb-node__not-free__cbio-cluster-65.txt"


def test_tops_memory_summary_is_read_as_the_boxs_memtotal_not_a_headerless_csv(tmp_path: Path) -> None:
    """Round 30 (cbio65): cBio/cbio-cluster#65's "available memory" as pasted: procps top's two
    summary lines (`Mem:  264488144k total, 251337344k used, ...`, `Swap: ... cached`) saved as
    free.txt. Refused as "a CSV without its header row ... `nvidia-smi --query-gpu=...`", wrong
    advice; then refused naming top's summary. Round 37 (m37e 06): top's Mem total is
    /proc/meminfo's MemTotal, as free's: read (264488144 KiB, 252.2 GiB), its source said.
    Edited in-test: procps-ng's newer summary (`KiB Mem : ... total,`) reads the same, and
    comma-separated lines with such labelled cells that are no top's (`Disk: 1200k total, 300k
    used`) are no headerless nvidia-smi CSV."""
    text = (REAL / CBIO).read_text(encoding="utf-8")
    newer = "KiB Mem : 264488144 total,  1234567 free, 2345678 used, 3456789 buff/cache\n"
    for shown in (text, newer):
        got = verdicts(tmp_path, "free.txt", shown, "ram: 256GB\n")["ram"]
        assert got == ("pass", "252.2 GiB (270.8 GB), top's Mem total (its memory summary; no free given)"), (
            got
        )
    with pytest.raises(UsageError) as refused:
        verdicts(
            tmp_path, "disk.txt", "Disk: 1200k total, 300k used\nTape: 10k total, 2k used\n", "ram: 1GB\n"
        )
    assert "a CSV without its header row" not in str(refused.value)


TOPO_I = "nvidia-smi-usage-error__topo-m-i-0-needs-n-or-p__copied-command__ai-performance-engineering-8.txt"


def test_an_option_nvidia_smi_says_needs_another_is_its_refusal_of_its_command_line(tmp_path: Path) -> None:
    """cfregly/ai-performance-engineering#8: `nvidia-smi topo -m -i 0`, the poster's `# output`,
    then `The -i command line argument must be used in conjunction with -n or -p.`. Before, it
    was refused as "not a recognised command output" (every format listed); now as nvidia-smi's
    refusal of its command line, naming the command to save without the option."""
    with pytest.raises(UsageError) as refused:
        verdicts(tmp_path, "topo.txt", (REAL / TOPO_I).read_text(encoding="utf-8"), "gpu_count: 8\n")
    said = str(refused.value)
    assert "nvidia-smi's refusal of the command line it was given (`The -i command line argument" in said
    assert said.endswith("with the option it names left out (`nvidia-smi topo -m`).")


@pytest.mark.parametrize(
    "message",
    [
        "The -i command line argument must be used in conjunction with -n or -p.",  # (the capture's, alone)
        "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.",
        'Option "-i" requires an argument',
    ],
)
def test_nvidia_smis_command_line_refusals_alone_are_said_so(tmp_path: Path, message: str) -> None:
    """The family of nvidia-smi's refusals of its command line, each the whole file."""
    with pytest.raises(UsageError) as refused:
        verdicts(tmp_path, "smi.txt", message + "\n", "gpu_count: 1\n")
    assert f"nvidia-smi's refusal of the command line it was given (`{message}`)" in str(refused.value)
