"""Shard mode's checks of the host's unpacked tree (pure)."""

from __future__ import annotations

from gpuonboard import shards
from gpuonboard.transfer import Entry


def test_tree_drift_compares_paths_kinds_and_file_sizes() -> None:
    local = {
        "a.bin": Entry("a.bin", "f", 10, 0, ""),
        "d/b.bin": Entry("d/b.bin", "f", 5, 0, ""),
        "link": Entry("link", "l", 7, 0, "", "a.bin"),
        "gone": Entry("gone", "f", 1, 0, ""),
    }
    host = {"a.bin": ("f", 10, 99), "d/b.bin": ("f", 4, 0), "link": ("l", 5, 0), "extra.pt": ("f", 1, 0)}
    assert shards.tree_drift(local, host) == (["d/b.bin", "gone"], ["extra.pt"])
    host["link"] = ("f", 7, 0)
    assert shards.tree_drift(local, host)[0] == ["d/b.bin", "gone", "link"]


def test_manifest_paths_reads_every_member_or_nothing() -> None:
    doc = shards.manifest(
        [("x.tar", "0" * 64, 10, [Entry("a b", "f", 1, 0, ""), Entry("c\udce9", "f", 2, 0, "")])], 1
    )
    assert shards.manifest_paths(doc.decode("utf-8", "surrogateescape")) == {"a b", "c\udce9"}
    assert shards.manifest_paths("not json") == set() == shards.manifest_paths('{"shards": 3}')
