"""The host-side hashing of many plain files (sh/hash_batch.sh through transfer.hash_command):
one process per batch, not per file, with the same answers as hashing file by file."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from gpuonboard import transfer


def _toolbox(tmp_path: Path, tools: tuple[str, ...], log: Path) -> Path:
    """A PATH dir of the named tools; the hashing ones log each start to `log`."""
    bin_dir = tmp_path / f"bin{len(tools)}"
    bin_dir.mkdir()
    for t in tools:
        found = shutil.which(t)
        assert found, t
        if t in ("openssl", "sha256sum"):
            (bin_dir / t).write_text(f'#!/bin/sh\necho {t} >> "{log}"\nexec {found} "$@"\n')
            (bin_dir / t).chmod(0o755)
        else:
            (bin_dir / t).symlink_to(found)
    return bin_dir


def _hash(bin_dir: Path, target: Path, rels: list[str]) -> dict[str, str | None]:
    out = subprocess.run(
        ["/bin/sh", "-c", transfer.hash_command(str(target))],
        input=transfer.hash_stdin(rels),
        capture_output=True,
        env={"PATH": str(bin_dir)},
        check=True,
    ).stdout.decode()
    return transfer.parse_hashes(rels, out)


def test_many_plain_files_are_hashed_by_one_process(tmp_path: Path) -> None:
    d = tmp_path / "d"
    (d / "sub dir").mkdir(parents=True)
    rels = [f"sub dir/f{i:04d} x" for i in range(400)] + ["-lead", "ünï"]
    for i, rel in enumerate(rels):
        (d / rel).write_bytes(str(i).encode() * (i + 1))
    want = {rel: hashlib.sha256((d / rel).read_bytes()).hexdigest() for rel in rels}
    for tools in (
        ("sh", "xargs", "readlink", "sha256sum", "openssl"),
        ("sh", "xargs", "readlink", "sha256sum"),
    ):
        log = tmp_path / f"log{len(tools)}"
        log.write_text("")
        assert _hash(_toolbox(tmp_path, tools, log), d, rels) == want, tools
        # (openssl: its check, then the batch; far from one process per file)
        assert len(log.read_text().splitlines()) <= 3, (tools, log.read_text())


def test_a_batch_with_a_link_or_a_missing_file_is_hashed_file_by_file(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    for n in ("a", "b", "back\\slash"):
        (d / n).write_text(n)
    (d / "l").symlink_to("a")
    want = {n: hashlib.sha256(n.encode()).hexdigest() for n in ("a", "b", "back\\slash")}
    log = tmp_path / "log"
    bin_dir = _toolbox(tmp_path, ("sh", "xargs", "readlink", "sha256sum", "openssl"), log)
    for rels, extra in (
        (["a", "l", "b"], {"l": transfer.link_hash("a")}),
        (["a", "gone", "b"], {"gone": None}),
        (["a", "back\\slash", "b"], {}),
    ):
        got = _hash(bin_dir, d, rels)
        assert got == {r: {**want, **extra}[r] for r in rels}, rels


def test_a_file_the_login_cannot_read_keeps_every_later_line_in_place(tmp_path: Path) -> None:
    """A file the host's login cannot read (here mode 000, hashed as `nobody`), before two files of
    the same content. Before, its line was `F ` with no end, the next file's line joined it, and
    every later file got the following file's digest: a corrupted copy whose neighbour held the
    content it should have had was read as matching."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to hash as another user")
    d = Path(tempfile.mkdtemp(prefix="hash-batch-"))
    try:
        d.chmod(0o755)
        files = {"a": b"one", "b": b"secret", "c": b"same", "d": b"same", "e": b"last"}
        for name, data in files.items():
            (d / name).write_bytes(data)
            (d / name).chmod(0o644)
        (d / "b").chmod(0o000)
        (d / "c").write_bytes(b"corrupt")  # the host's copy of c is corrupted; d is intact
        rels = list(files)
        out = subprocess.run(
            [
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "/bin/sh",
                "-c",
                transfer.hash_command(str(d)),
            ],
            input=transfer.hash_stdin(rels),
            capture_output=True,
            check=True,
        ).stdout.decode()
        want = {rel: hashlib.sha256(data).hexdigest() for rel, data in files.items()}
        got = transfer.parse_hashes(rels, out)
        assert got["b"] is None, out
        assert transfer.verify.differing(rels, want, out) == ["b", "c"], out
        assert got["e"] == want["e"], out
    finally:
        shutil.rmtree(d)
