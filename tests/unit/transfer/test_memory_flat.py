"""Issue 31: memory flat in the number of files. Each test measures with tracemalloc what one
per-file step of a shard upload holds beyond what it must, at a modest N, and bounds it per
file, so that a copy of the whole scan, listing or output coming back (each ~100-300 bytes a
file, hundreds of MB at 1,000,000 files) fails here. bench/memory_files.py measures the CLI."""

from __future__ import annotations

import dataclasses
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpuonboard.transfer import hashcache, shards
from gpuonboard.transfer.source import Entry, SourceTree
from gpuonboard.transfer.verify import differing, parse_hashes

N = 20_000


def _extra(run: Callable[[], Any]) -> tuple[int, Any]:
    """(bytes the peak reached above what was allocated before, run's result)."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        out = run()
        return tracemalloc.get_traced_memory()[1] - before, out
    finally:
        tracemalloc.stop()


def _entries(n: int, sha: str = "") -> list[Entry]:
    return [
        Entry(
            f"d{i // 1000:04d}/f{i:07d}.bin", "f", 64 + i % 137, 1_764_672_000, sha, "", 10**18 + i, 10**6 + i
        )
        for i in range(n)
    ]


def test_the_scans_entry_is_slotted() -> None:
    """A dict-backed entry costs ~100 bytes more per file."""
    e = _entries(1)[0]
    assert not hasattr(e, "__dict__")


def test_host_hashes_are_compared_line_by_line() -> None:
    """No list of the output's lines nor dict of its digests: the peak is a few lines, not
    ~200 bytes a file; the result is parse_hashes's."""
    rels = [f"d/f{i:07d}" for i in range(N)]
    digests = [f"{i:064x}" for i in range(N)]
    expect = dict(zip(rels, digests, strict=True))
    lines = [f"F {d}" for d in digests]
    lines[7] = "missing"
    lines[N - 3] = "F " + "f" * 64
    stdout = "\n".join(lines[:-1]) + "\n"  # (the last line lost: none read for it)
    extra, bad = _extra(lambda: differing(rels, expect, stdout))
    assert bad == [rels[7], rels[N - 3], rels[N - 1]]
    assert extra < 64 * 1024, f"{extra / N:.0f} bytes a file"
    got = parse_hashes(rels, stdout)
    assert [r for r in rels if got[r] != expect[r]] == bad


def test_manifest_is_not_built_twice_over() -> None:
    """The manifest of one big shard: its bytes and a bounded piece, not its lines, their join
    and its encoding at once (~3x its size)."""
    members = _entries(N)
    extra, made = _extra(lambda: shards.manifest([("a" * 32 + ".tar", "b" * 64, 1, members)], 1 << 20))
    assert made.count(b'"path"') == N
    assert extra < 1.3 * len(made) + 2 * 1024 * 1024, f"{extra / len(made):.2f}x the manifest"


def test_hash_cache_holds_an_entry_not_a_copy(tmp_path: Path) -> None:
    """put() of an entry that holds its hash costs the dict's slot only; save() writes the
    JSON record by record, never the whole text at once (~130 bytes a file)."""
    sha = "c" * 64
    entries = _entries(N, sha)
    cache = hashcache.HashCache(tmp_path)

    def put_all() -> None:
        for e in entries:
            cache.put(e, sha)

    extra, _ = _extra(put_all)
    assert extra / N < 80, f"{extra / N:.0f} bytes a file"  # (a list per file: ~110)
    keep = {e.rel: e for e in entries}
    extra, _ = _extra(lambda: cache.save(keep))
    assert extra < 2 * 1024 * 1024, f"{extra / N:.0f} bytes a file"
    again = hashcache.HashCache(tmp_path)
    assert all(again.get(e) == sha for e in entries)


def test_filling_in_hashes_does_not_copy_the_scan(tmp_path: Path) -> None:
    """known_hashes replaces each entry in place: no list of the tree's items beside it."""
    from gpuonboard.steps.dataset.scan import known_hashes

    sha = "d" * 64
    tracemalloc.start()  # (before the scan is made: the old entries' frees count)
    try:
        entries = _entries(N)
        tree = SourceTree(tmp_path, {e.rel: e for e in entries})
        cache = hashcache.HashCache(tmp_path)
        for e in entries:
            cache.put(dataclasses.replace(e, sha256=sha), sha)
        del entries, e
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        known_hashes(tree, cache)
        extra = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert all(e.sha256 == sha for e in tree.entries.values())
    assert extra / N < 16, f"{extra / N:.0f} bytes a file"  # (a copy of the items: 72)


def test_host_hashing_in_batches_finds_each_mismatch(tmp_path: Path, monkeypatch: Any) -> None:
    """mismatches() hashes HASH_BATCH files per command (real sh and sha tools, run locally):
    bounded output per command (a whole 200,000-file one hung: the runner writes all of stdin
    before reading), and a mismatch or a missing file found in any batch, in order."""
    from gpuonboard.connection import LocalRunner
    from gpuonboard.inventory import Host
    from gpuonboard.steps.base import StepContext
    from gpuonboard.steps.dataset import verify
    from gpuonboard.transfer.crypto import sha256_file

    for i in range(10):
        (tmp_path / f"f{i}").write_bytes(b"x" * i)
    expect = {f"f{i}": sha256_file(tmp_path / f"f{i}") for i in range(10)}
    expect["f4"], expect["gone"] = "0" * 64, "1" * 64
    runner = LocalRunner(Host("l", "127.0.0.1", connection="local"))
    calls: list[str] = []
    run = runner.run

    def counted(cmd: str, **kw: Any) -> Any:
        calls.append(cmd)
        return run(cmd, **kw)

    monkeypatch.setattr(runner, "run", counted)
    monkeypatch.setattr(verify, "HASH_BATCH", 3)
    ctx = StepContext(host=runner.host, runner=runner, facts=None, check=False, project=tmp_path)  # type: ignore[arg-type]
    assert verify.mismatches(ctx, str(tmp_path), expect) == ["f4", "gone"]
    assert len(calls) == 4
