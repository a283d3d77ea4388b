"""Issue 32: the host space an upload needs, stated before its first byte (pure parts), and
shard mode's removal of its shards once an unpacked tree is verified (the host commands)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from gpuonboard.steps.dataset.options import parse_options
from gpuonboard.steps.dataset.preflight import space_line
from gpuonboard.steps.dataset.sharded import _room_note
from gpuonboard.steps.dataset.work import Work
from gpuonboard.transfer import SourceTree, shardstream


def _work(unpack: bool, keep: bool) -> Work:
    work = Work(SourceTree(Path("/x"), {}), [], "/data/x.shards")
    work.unpack, work.keep_shards, work.send_idx, work.need = unpack, keep, [0, 1, 2], 3 * 1024 * 1024
    return work


def test_shard_mode_states_the_peak_with_the_unpacks_tree_and_what_stays() -> None:
    opts = parse_options({"source": "x", "dest": "/data", "unpack": True})
    note = _room_note(opts, _work(True, False), 5 * 1024 * 1024, 2 * 1024 * 1024, False)
    assert note == (
        "host space: 5.0 MiB under /data at the peak: 3 shards (3.0 MiB) and the tree (2.0 MiB)"
        " unpacked beside the current one until it is swapped in; then the shards are removed once"
        " the tree is verified: the tree and a small manifest stay"
    )
    kept = _room_note(opts, _work(True, True), 5 * 1024 * 1024, 2 * 1024 * 1024, False)
    assert kept.endswith("; the shards stay (keep_shards)")
    assert space_line(opts, (0, 0), note) == note
    alone = _room_note(opts, _work(False, True), 3 * 1024 * 1024, 0, False)
    assert alone == "host space: 3.0 MiB under /data for 3 shards (3.0 MiB), kept there as the upload"


def test_plain_mode_states_its_peak_and_what_it_adds() -> None:
    opts = parse_options({"source": "x", "dest": "/data"})
    assert space_line(opts, (2048, 1024), "") == (
        "host space: 2.0 KiB under /data at the peak (each file arrives as a temp file beside what"
        " it replaces), 1.0 KiB more in the end (the files sent)"
    )


def test_keep_shards_is_checked_when_the_playbook_is_loaded() -> None:
    import pytest

    from gpuonboard.steps.base import StepArgsError

    with pytest.raises(StepArgsError):
        parse_options({"source": "x", "dest": "/data", "unpack": True, "keep_shards": "perhaps"})


def test_the_drop_command_removes_the_shards_and_leftovers_only(tmp_path: Path) -> None:
    store = tmp_path / "x.shards"
    store.mkdir()
    names = ["a" * 32 + ".tar", "b" * 32 + ".tar.zst.age"]
    keep = ["manifest.json", "manifest.unpacked.json", "unpacked-0123456789abcdef", "c" * 32 + ".tar"]
    for n in [*names, *keep, ".incoming-000003", ".incoming-000003.sum", ".finish.x"]:
        (store / n).write_text("x")
    cmd = shardstream.drop_command(str(store))
    subprocess.run(cmd, shell=True, input=shardstream.drop_stdin(names), check=True)
    assert sorted(p.name for p in store.iterdir()) == sorted(keep)
