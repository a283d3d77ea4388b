"""`gpuonboard facts`: outputs saved on Windows (a UTF-8 byte-order mark from Notepad, UTF-16
from PowerShell's `>`, CRLF line ends) or copied from a terminal with the prompt line still in
them are judged as the same output saved plainly, through the real CLI on real captures."""

from __future__ import annotations

import codecs
import json
import subprocess
import sys
from pathlib import Path

import pytest

REAL = Path(__file__).parents[2] / "fixtures" / "real"
XML = "nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml"
SAVED = [
    XML,
    "nvidia-smi-query-gpu__h200__1gpu__driver580.159.04.csv",
    "nvidia-smi__a100-sxm4-80gb__4gpu__driver555.42.02.txt",
    "nvidia-smi-q__a10__1gpu__driver535.129.03.txt",
    "lscpu__intel-xeon-16vcpu__h200-vm.txt",
    "lscpu-J__intel-xeon-16vcpu__h200-vm.json",
    "free__ubuntu-18.04-vm.txt",
    "free-b__h200-vm.txt",
    "df-P-B1__h200-vm.txt",
    "lsblk-J-b__h200-vm.json",
    "nproc__h200-vm.txt",
]


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-c", "from gpuonboard.cli import main; main()", "facts", *args, "--json"]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=60)


def judged(tmp_path: Path, name: str, data: bytes) -> tuple[int, dict[str, object], list[tuple[str, str]]]:
    """(exit code, facts summary, (rule, verdict)s) of one saved file, under the fixture's name
    (a `free` file's unit and `nproc` come from it)."""
    folder = tmp_path / f"d{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    (folder / name).write_bytes(data)
    r = cli(tmp_path, str(folder / name))
    assert r.returncode in (0, 1), r.stderr
    doc = json.loads(r.stdout)
    return r.returncode, doc["facts"]["summary"], [(c["name"], c["verdict"]) for c in doc["rules"]]


def crlf(data: bytes) -> bytes:
    return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


VARIANTS = {
    "utf8-bom": lambda d: codecs.BOM_UTF8 + d,
    "utf8-bom-crlf": lambda d: codecs.BOM_UTF8 + crlf(d),
    "powershell-utf16": lambda d: codecs.BOM_UTF16_LE + crlf(d).decode().encode("utf-16-le"),
    "classic-mac-cr": lambda d: d.replace(b"\r\n", b"\n").replace(b"\n", b"\r"),
    "prompt-and-command": lambda d: b"[root@gpu-01 ~]# sudo nvidia-smi -q -x\n" + d,
    "ssh-prompt-and-next-prompt": lambda d: b"me@laptop:~$ ssh root@gpu-01 lscpu\n" + d + b"me@laptop:~$ \n",
    "windows-prompt-crlf": lambda d: crlf(
        # (a command that says nothing of the output's form: a copied `free -b` gives free's unit)
        b"PS C:\\Users\\me> ssh root@gpu-01 cat saved.txt\n" + d + b"PS C:\\Users\\me>"
    ),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("name", SAVED)
def test_a_saved_output_reads_the_same_however_it_was_saved(tmp_path: Path, name: str, variant: str) -> None:
    """Before: with a byte-order mark `lscpu`, `df`, `lsblk -J` and an nvidia-smi CSV were `not a
    recognised command output`, an nvidia-smi XML or CSV was a box whose driver failed (exit 1),
    and `free` was misread by 100x (a 2 GB VM read as 237 GiB); with a prompt line the same."""
    data = (REAL / name).read_bytes()
    if name.startswith("nproc") and variant in ("prompt-and-command", "ssh-prompt-and-next-prompt"):
        # (a bare number under another tool's copied command, `nvidia-smi -q -x`, `lscpu`, is not
        # nproc's: refused, api/saved_forms.nproc_refusal; `cat saved.txt` says nothing: read)
        folder = tmp_path / "refused"
        folder.mkdir()
        (folder / name).write_bytes(VARIANTS[variant](data))
        assert cli(tmp_path, str(folder / name)).returncode == 2
        return
    assert judged(tmp_path, name, VARIANTS[variant](data)) == judged(tmp_path, name, data)


def test_a_bom_xml_is_the_box_it_describes_not_a_failed_driver(tmp_path: Path) -> None:
    code, summary, rules = judged(tmp_path, "smi.xml", codecs.BOM_UTF8 + (REAL / XML).read_bytes())
    assert code == 0
    assert (summary["gpu_count"], summary["driver_version"]) == (1, "580.159.04")
    assert ("nvidia_driver", "pass") in rules


def test_a_bom_free_is_not_misread(tmp_path: Path) -> None:
    data = (REAL / "free__ubuntu-18.04-vm.txt").read_bytes()
    _, summary, _ = judged(tmp_path, "free.txt", codecs.BOM_UTF8 + data)
    assert summary["ram_bytes"] == 2017300 * 1024  # `Mem: 2017300` KiB, a 2 GB VM


def test_output_lines_that_look_like_prompts_are_kept() -> None:
    """Only a prompt line is dropped: the output's own first and last lines stay, a prompt glued
    to a last line without its newline included."""
    from gpuonboard.api.saved_text import strip_prompt

    xml = (REAL / XML).read_text()
    assert strip_prompt(xml) == xml
    glued = xml.rstrip("\n") + "root@gpu-01:~# "
    assert strip_prompt(glued) == glued  # (the XML's last line is not a prompt)
    df = "Filesystem     1B-blocks  Used Available Use% Mounted on\n/dev/vda1 100 50 50 50% /\n"
    assert strip_prompt(df) == df


@pytest.mark.parametrize(
    ("name", "prompt"),
    [
        ("ibstat__h100-8x-ndr400__some-down__gpud.txt", b"root@gpu-01:~# ibstat\n"),
        ("ibstatus__a100-hdr200__all-active__gpud.txt", b"[root@gpu01 ~]# sudo ibstatus\n"),
        ("ibv_devinfo__connectx3-mlx4__2hca-2of4-ports-down.txt", b"ibv_devinfo\n"),
    ],
)
def test_an_rdma_listing_with_its_prompt_reads_as_without(tmp_path: Path, name: str, prompt: bytes) -> None:
    """A prompt and the next prompt pasted around an RDMA listing change nothing (`ibstat` and
    `ibstatus` are in the prompt-command list since 2026-12-04; their parsers skipped the line)."""
    data = (REAL / name).read_bytes()
    assert judged(tmp_path, name, prompt + data + b"root@gpu-01:~# \n") == judged(tmp_path, name, data)


def _refusal(tmp_path: Path, name: str, data: bytes) -> str:
    folder = tmp_path / "box"
    folder.mkdir(exist_ok=True)
    (folder / name).write_bytes(data)
    (folder / "L.txt").write_bytes((REAL / "nvidia-smi-L__l40s__1gpu__driver595.80.txt").read_bytes())
    r = cli(tmp_path, f"{folder / name},{folder / 'L.txt'}")  # (each named: a bad input)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {folder / name}: "), r.stderr
    return lines[0].removeprefix(f"error: {folder / name}: ")


def test_a_gzip_saved_output_is_read_as_the_text_it_holds(tmp_path: Path) -> None:
    """`nvidia-bug-report.log.gz` (what vendors attach) crashed `facts DIR` with "internal error
    (Error: new-line character seen in unquoted field ...)", exit 70; then it was refused ("a gzip
    file, not a saved command output: gunzip it"). Now a gzip file is decompressed (bounded:
    api/saved_bytes.gunzipped) and judged as the text it holds: the real A10 `-q` judged as if
    saved plainly (the sentence asserted before changed on purpose)."""
    import gzip

    data = (REAL / "nvidia-smi-q__a10__1gpu__driver535.129.03.txt").read_bytes()
    assert judged(tmp_path, "nvidia-smi-q.txt.gz", gzip.compress(data)) == judged(tmp_path, "q.txt", data)


@pytest.mark.parametrize(
    ("source", "starts"),
    [
        (Path(sys.executable).resolve(), "a program (ELF binary), not a saved command output"),
        (Path("/usr/share/gitweb/static/git-logo.png"), "a PNG image, not a saved command output"),
    ],
)
def test_a_program_or_an_image_is_refused_in_one_sentence(tmp_path: Path, source: Path, starts: str) -> None:
    if not source.is_file():
        pytest.skip(f"{source} is not on this machine")
    assert _refusal(tmp_path, "x.txt", source.read_bytes()[:65536]).startswith(starts)


def test_a_file_with_nul_bytes_is_refused(tmp_path: Path) -> None:
    data = (REAL / "lscpu__intel-xeon-16vcpu__h200-vm.txt").read_bytes()
    said = _refusal(tmp_path, "lscpu.txt", data[:100] + b"\x00\x00" + data[100:])
    assert said == "a binary file (it holds NUL bytes), not a saved command output: leave it out."


@pytest.mark.parametrize("damage", ["nul", "program", "gzip-in-gzip"])
def test_a_folder_file_that_cannot_be_read_is_one_missing_answer(tmp_path: Path, damage: str) -> None:
    """A binary, a program or a gzip inside a gzip among a folder's saved outputs refused the whole
    folder (exit 2): the real L40S `nvidia-smi -L` beside it unjudged. Now the file is named in
    a note (what it is, what to do), what it would have shown unverified, the rest judged."""
    import gzip

    lscpu = (REAL / "lscpu__intel-xeon-16vcpu__h200-vm.txt").read_bytes()
    data = {
        "nul": lscpu[:100] + b"\x00\x00" + lscpu[100:],
        "program": Path(sys.executable).resolve().read_bytes()[:65536],
        "gzip-in-gzip": gzip.compress(gzip.compress(lscpu)),
    }[damage]
    folder = tmp_path / "box"
    folder.mkdir()
    (folder / "lscpu.txt").write_bytes(data)
    (folder / "L.txt").write_bytes((REAL / "nvidia-smi-L__l40s__1gpu__driver595.80.txt").read_bytes())
    r = cli(tmp_path, str(folder))
    assert r.returncode == 0, r.stderr
    assert r.stderr.startswith(f"note: {folder / 'lscpu.txt'}: ") and len(r.stderr.splitlines()) == 1
    assert r.stderr.strip().endswith(
        "Not read: what it would have shown is unverified (one missing answer: the other files are judged)."
    )
    assert json.loads(r.stdout)["facts"]["summary"]["gpu_count"] == 1
