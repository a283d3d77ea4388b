"""`gpuonboard facts`: empty folders, damaged or failed outputs, and outputs it recognised but
did not show, judged through the real CLI on real captured outputs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REAL = Path(__file__).parents[1] / "fixtures" / "real"
H200_XML = REAL / "nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml"


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-c", "from gpuonboard.cli import main; main()", "facts", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=60)


def test_an_empty_folder_is_a_usage_error_not_a_pass(tmp_path: Path) -> None:
    """A folder with nothing in it judged nothing and exited 0 with an empty table."""
    folder = tmp_path / "from-vendor"
    folder.mkdir()
    (folder / ".DS_Store").write_text("x")  # hidden files are left out, as before
    r = cli(tmp_path, str(folder))
    assert r.returncode == 2, r.stdout
    assert (
        r.stderr.strip() == f"error: {folder}: no saved command output in this directory (it holds no files)."
    )


def test_a_cut_short_nvidia_smi_xml_names_the_file_exit_2(tmp_path: Path) -> None:
    """A truncated `nvidia-smi -q -x` (a mail client cut it) passed: exit 0, gpu_count 0, a
    warning line; it is a bad file, not a box without GPUs."""
    cut = tmp_path / "smi.xml"
    cut.write_bytes(H200_XML.read_bytes()[:3000])
    r = cli(tmp_path, str(cut))
    assert r.returncode == 2, r.stdout
    # cut mid-record: named an incomplete probe (not "XML not parseable"), still a bad file
    assert r.stderr.strip() == (
        f"error: {cut}: this nvidia-smi XML cannot be read (the nvidia-smi -q -x output ends before"
        " </nvidia_smi_log> (mid-record): incomplete probe, rerun); the file is cut short or damaged:"
        " save `nvidia-smi -q -x` again."
    )


def test_nvidia_smi_that_failed_fails_without_an_order(tmp_path: Path) -> None:
    """What nvidia-smi prints on a box whose driver does not load passed with exit 0 when no order
    was given (`invoke facts vendor-outputs/`, the README's first example)."""
    failed = tmp_path / "nvidia-smi.txt"
    failed.write_text(
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that"
        " the latest NVIDIA driver is installed and running.\n\n"
    )
    r = cli(tmp_path, str(failed), "--json")
    assert r.returncode == 1, r.stdout + r.stderr
    rule = {c["name"]: c for c in json.loads(r.stdout)["rules"]}["nvidia_driver"]
    assert rule["verdict"] == "fail"
    # the driver's own words, not "answered but listed no GPU"
    assert rule["actual"].startswith("nvidia-smi failed (NVIDIA-SMI has failed because it couldn't"), rule
    # a good output gets the same rule, passing
    ok = cli(tmp_path, str(H200_XML), "--json")
    assert ok.returncode == 0, ok.stderr
    rule = {c["name"]: c for c in json.loads(ok.stdout)["rules"]}["nvidia_driver"]
    assert (rule["verdict"], rule["actual"]) == ("pass", "driver 580.159.04, CUDA 13.0")


def test_nvcc_is_shown_and_gpu_count_unknown_without_nvidia_smi(tmp_path: Path) -> None:
    """A saved `nvcc --version` was recognised and then shown nowhere; without an nvidia-smi
    output the table said `gpu_count 0`, as if the box had no GPU."""
    folder = tmp_path / "saved"
    folder.mkdir()
    shutil.copy(REAL / "nvcc-version__cuda-11.4__jetson-agx-xavier-aarch64.txt", folder / "nvcc.txt")
    shutil.copy(REAL / "free-b__h200-vm.txt", folder / "free-b.txt")
    r = cli(tmp_path, str(folder), "--json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)["facts"]["summary"]
    assert summary["cuda_toolkit"] == "11.4.239"
    assert summary["gpu_count"] is None
    table = cli(tmp_path, str(folder))
    assert table.returncode == 0, table.stderr
    rows = {
        line.split("│")[1].strip(): line.split("│")[2].strip()
        for line in table.stdout.splitlines()
        if "│" in line
    }
    assert rows["cuda_toolkit"] == "11.4.239" and rows["gpu_count"] == "-"


def test_two_outputs_of_one_command_name_both_files(tmp_path: Path) -> None:
    """Two outputs of one nvidia-smi format (two -q -x files) cannot both be the box's: refused,
    both named."""
    other = REAL / "nvidia-smi-q-x__a100-sxm4-80gb__1of4gpu__driver535.54.03.xml"
    r = cli(tmp_path, f"{H200_XML},{other}")
    assert r.returncode == 2
    assert r.stderr.strip() == (
        f"error: {other}: a second nvidia_smi output (the first is {H200_XML}); pass one file per command."
    )


def test_two_nvidia_smi_formats_of_one_box_are_merged(tmp_path: Path) -> None:
    """-q -x and the plain table of one box answer together, merged as the live probe's formats:
    every field from the XML (the richer format), both formats named in the source."""
    table = REAL / "nvidia-smi__h200__1gpu__driver580.159.04.txt"
    r = cli(tmp_path, f"{H200_XML},{table}", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    gpu = out["facts"]["gpu"]
    assert (gpu["source"], gpu["complete"]) == ("xml+table", True)
    assert [(g["name"], g["provenance"]) for g in gpu["gpus"]] == [("NVIDIA H200", [])]
    rules = {c["name"]: c for c in out["rules"]}
    assert (rules["nvidia_driver"]["verdict"], rules["nvidia_driver"]["actual"]) == (
        "pass",
        "driver 580.159.04, CUDA 13.0",
    )


def test_a_huge_file_in_the_folder_is_refused_without_reading_it_whole(tmp_path: Path) -> None:
    folder = tmp_path / "saved"
    folder.mkdir()
    shutil.copy(H200_XML, folder / "smi.xml")
    with (folder / "dataset.tar").open("wb") as f:
        f.truncate(40 * 2**20)  # sparse: 40 MiB of zeros
    r = cli(tmp_path, str(folder))
    assert r.returncode == 2
    assert r.stderr.strip() == (
        f"error: {folder / 'dataset.tar'}: larger than 32 MiB, not a saved command output;"
        " leave it out of the files to judge."
    )


def test_a_glob_skips_subfolders_as_a_folder_does(tmp_path: Path) -> None:
    folder = tmp_path / "saved"
    (folder / "old").mkdir(parents=True)
    shutil.copy(H200_XML, folder / "smi.xml")
    r = cli(tmp_path, "saved/*", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["facts"]["summary"]["gpu_count"] == 1


def test_facts_json_to_a_reader_that_left_exits_141_quietly(tmp_path: Path) -> None:
    """`facts X --json | head -1` said 'internal error (BrokenPipeError ...)' and exited 70."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        r = subprocess.run(
            [
                sys.executable,
                "-c",
                "from gpuonboard.cli import main; main()",
                "facts",
                str(H200_XML),
                "--json",
            ],
            stdout=write_end,
            stderr=subprocess.PIPE,
            timeout=60,
        )
    finally:
        os.close(write_end)
    assert (r.returncode, r.stderr.decode()) == (141, "")


def test_a_saved_nproc_is_read_by_its_file_name(tmp_path: Path) -> None:
    """`nproc` (what the live probe reads for the cores the login may use) prints a bare number:
    a file named nproc* is that; it made the whole directory an input error."""
    (tmp_path / "nproc.txt").write_text("12\n")
    r = cli(tmp_path, str(tmp_path / "nproc.txt"), "--json")
    assert r.returncode in (0, 1), r.stderr
    assert json.loads(r.stdout)["facts"]["nproc"] == 12
    (tmp_path / "count.txt").write_text("12\n")  # (a bare number under another name: no telling)
    assert cli(tmp_path, str(tmp_path / "count.txt")).returncode == 2
