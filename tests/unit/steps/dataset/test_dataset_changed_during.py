"""A plain upload verified on the host (sha256 of what was sent) is no upload of the dataset as
it is when a file changed on this machine after rsync sent it: `sync` said `N files verified by
sha256` and exited 0 while the host kept the old labels. Real files, real scans."""

from __future__ import annotations

import os
from pathlib import Path

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
