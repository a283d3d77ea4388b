"""The host-side hashing of many plain files (sh/hash_batch.sh through transfer.hash_command):
one process per batch, not per file, with the same answers as hashing file by file."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

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
