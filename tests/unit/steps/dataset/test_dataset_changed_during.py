"""A plain upload verified on the host (sha256 of what was sent) is no upload of the dataset as
it is when a file changed on this machine after rsync sent it: `sync` said `N files verified by
sha256` and exited 0 while the host kept the old labels. Real files, real scans."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpuonboard import transfer
from gpuonboard.steps.dataset.scan import changed_during


def test_a_file_changed_or_replaced_after_the_scan_fails_the_upload_by_name(tmp_path: Path) -> None:
    (tmp_path / "a_labels.csv").write_text("id,label\n1,cat\n")
    (tmp_path / "z_big.bin").write_bytes(b"Z" * 4096)
    (tmp_path / "same.txt").write_text("same\n")
    (tmp_path / "latest").symlink_to("same.txt")
    tree = transfer.scan_source(tmp_path, hashes=False)
    assert changed_during(tree, ["a_labels.csv", "z_big.bin", "same.txt", "latest"]) is None
    # the user fixes a label meanwhile (size and mtime move)
    (tmp_path / "a_labels.csv").write_text("id,label\n1,dog\n2,cat\n")
    # an editor's save: a new file renamed over the old one, same size and mtime (a new inode)
    st = os.stat(tmp_path / "z_big.bin")
    (tmp_path / "z_big.new").write_bytes(b"Y" * 4096)
    os.utime(tmp_path / "z_big.new", ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(tmp_path / "z_big.new", tmp_path / "z_big.bin")
    (tmp_path / "latest").unlink()
    (tmp_path / "latest").symlink_to("z_big.bin")  # (a link pointed elsewhere)
    assert changed_during(tree, ["a_labels.csv", "z_big.bin", "same.txt", "latest"]) == (
        "'a_labels.csv', 'z_big.bin', 'latest' changed on this machine while the upload ran (the host"
        " holds it as it was sent); rerun to send it as it is now: what is unchanged is not sent again"
    )


def test_a_file_the_hashing_beside_rsync_finds_deleted_is_named_as_changed_since_the_scan(
    tmp_path: Path,
) -> None:
    """A dataset scanned without hashes, one file then deleted (as a user's `rm` while rsync runs):
    the sha256 pass beside rsync meets it gone. It is named as changed since the scan, the sentence
    rsync's own `link_stat ... No such file` gets, whichever of the two reached it first (the
    integration test test_dataset_vanished.py failed under load with "cannot read ... No such file
    or directory; fix it (or move it out)" where the hashing got there first)."""
    from gpuonboard import transfer
    from gpuonboard.steps.dataset.plain import _gone_since_scan

    (tmp_path / "sub dir").mkdir()
    (tmp_path / "a.bin").write_bytes(b"a" * 10)
    (tmp_path / "sub dir" / "nested.bin").write_bytes(b"b" * 10)
    tree = transfer.scan_source(tmp_path, hashes=False)
    (tmp_path / "sub dir" / "nested.bin").unlink()
    with pytest.raises(OSError) as caught:
        transfer.hash_tree(tree)
    said = _gone_since_scan(caught.value, tree)
    assert said == (
        "'sub dir/nested.bin' changed on this machine since the scan (deleted, replaced or written"
        " to): rerun to send the dataset as it is now"
    )
