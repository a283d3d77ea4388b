"""A fresh ext4 on a loop-mounted sparse image, for benchmarks that create many files.

Why: this VM's root file system is ext4 without a journal, and such an ext4 skips every inode
freed in the last 5 minutes when it allocates a new one, scanning them one by one from the
start of the block group each time (`recently_deleted()` in fs/ext4/ialloc.c). After any large
delete (an earlier run's temp dir) creating files costs 0.4-0.7 ms of kernel CPU each instead of
~0.03 ms: a benchmark then measures the VM's disk, not the tool. A freshly made ext4 with a
journal (as on a laptop's or a server's disk) does not. Needs root (mkfs, mount).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path


def fresh_disk(image: Path, mount_at: Path, size: int, block: int = 0, inodes: int = 0) -> None:
    """A new ext4 of `size` bytes (journal on, inode tables written now: no background lazy
    init competing for the CPU during the run; `block`/`inodes`: mkfs's -b/-N when given) on a
    sparse image file, loop-mounted at `mount_at`."""
    with image.open("wb") as f:
        f.truncate(size)
    argv = ["mkfs.ext4", "-q", "-F", "-m", "0", "-E", "lazy_itable_init=0,lazy_journal_init=0"]
    argv += ["-b", str(block)] if block else []
    argv += ["-N", str(inodes)] if inodes else []
    subprocess.run([*argv, str(image)], check=True, capture_output=True)
    mount_at.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-o", "loop", str(image), str(mount_at)], check=True, capture_output=True)


def unmount(mount_at: Path) -> None:
    """Unmount what fresh_disk mounted (a loop device mounted with -o loop detaches itself). A
    process the benchmark ran may still hold the disk for a moment after it exits (its own
    children closing): tried again for up to 5 s, then detached lazily, so that no mount and no
    loop device outlive the benchmark (a failed unmount also failed the temp dir's removal)."""
    for _ in range(50):
        if subprocess.run(["umount", str(mount_at)], check=False, capture_output=True).returncode == 0:
            return
        if subprocess.run(["mountpoint", "-q", str(mount_at)], check=False).returncode != 0:
            return
        time.sleep(0.1)
    subprocess.run(["umount", "-l", str(mount_at)], check=False, capture_output=True)
