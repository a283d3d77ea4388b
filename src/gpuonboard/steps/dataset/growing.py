"""Plain encrypted mode's big files: sent while they are encrypted. A file of GROW_MIN bytes or
more with no ciphertext cached yet is encrypted by a thread into its temp file in the cache,
which the stage links at once; rsync sends what exists of it into the host's partial dir
(`<dir>/.gpuonboard-rsync-partial/<name>.age`, where an interrupted rsync leaves its partial
file), run after run while it grows: the first run as any other (replacing a stale partial of
an earlier ciphertext), the next ones with --append (only the bytes the host lacks, with no
delta search over what it holds: that search cost the link 5-20 % in a third of its seconds on 2
cores), the last once the ciphertext is whole. The host then renames it to the real name after
checking its size (LAND_SCRIPT); the sha256 verification follows as for every file. Where the rename
cannot be done, the batch's own rsync run sends the file under its real name with that partial as
its basis, so only the rest travels. The link thus starts within milliseconds instead of after the
whole file was encrypted (1 GiB: 4-7 s), and nothing partial ever carries the file's real name on
the host. A file whose ciphertext is torn (written to while read) leaves only its partial there,
as an interrupted upload does."""

from __future__ import annotations

import os
import posixpath
import shutil
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuonboard import children, shell, transfer
from gpuonboard.transfer import crypto, follow

GROW_MIN = 32 << 20  # a file this big, its ciphertext not cached, is sent while it is encrypted
GROW_FIRST = 4 << 20  # ... its first rsync run starts once this much ciphertext exists
POLL_S = 0.02
INTERRUPTED = 20  # rsync's exit when stopped by a signal


@dataclass
class Growing:
    """One big file's ciphertext being made (by `start`) while rsync sends it."""

    rel: str  # the dataset file (plaintext rel)
    link: Path  # its stage entry (`<rel>.age`): a hard link to the temp ciphertext
    done: threading.Event = field(default_factory=threading.Event)
    linked: threading.Event = field(default_factory=threading.Event)
    result: tuple[str, Path] | None = None  # (plaintext sha256, cached ciphertext) once whole
    error: BaseException | None = None
    same: bool = False  # (finish) the stage links the very file that was sent as it grew

    def size(self) -> int:
        """Bytes of ciphertext made so far (0 before the stage links the temp file)."""
        try:
            return self.link.stat().st_size if self.linked.is_set() else 0
        except OSError:
            return 0

    def wait_for(self, size: int) -> None:
        """Until `size` bytes exist, or the encryption ended (done or failed)."""
        while not self.done.is_set() and self.size() < size and not children.STOPPING.is_set():
            self.done.wait(POLL_S)


def start(
    src: Path,
    enc: crypto.Encryption,
    cache: Path,
    rel: str,
    link: Path,
    made: Callable[[str, Path], None],
) -> Growing:
    """Encrypt `src` into the cache in a thread (at ENCRYPT_NICE), its temp file hard-linked at
    `link` as soon as it exists; `made(plaintext sha256, cached ciphertext)` runs once it is
    whole, on a thread of the process's priority, before it counts as done. Returns once
    GROW_FIRST bytes of it exist (or it ended)."""
    g = Growing(rel, link)

    def started(tmp: Path) -> None:
        link.parent.mkdir(parents=True, exist_ok=True)
        link.unlink(missing_ok=True)
        try:
            os.link(tmp, link)
        except OSError:
            return  # (no hard link here: the batch sends the whole file once it is made)
        g.linked.set()

    def encrypt() -> None:  # (at a lower priority, as the threads it starts: not `made`'s)
        try:
            _yield_cpu()
            g.result = crypto.encrypt_to_cache(src, enc, cache, started=started)
        except BaseException as exc:  # noqa: BLE001 - the sender raises it (Growing.error)
            g.error = exc

    def run() -> None:
        try:
            worker = threading.Thread(target=encrypt, name=f"encrypt {rel}", daemon=True)
            worker.start()
            worker.join()
            if g.result is not None and g.error is None:
                made(*g.result)
        except BaseException as exc:  # noqa: BLE001 - the sender raises it (Growing.error)
            g.error = exc
        finally:
            g.done.set()

    threading.Thread(target=run, name=f"record {rel}", daemon=True).start()
    g.wait_for(GROW_FIRST)
    return g


# The encrypting thread's nice increment: it runs ahead of the link (pyrage at 200+ MiB/s), and
# at full priority it took the CPU that rsync and ssh needed on 2 cores, so the link sagged to
# 60-90 Mbit/s of 100 for its first seconds; below them, it uses what they leave.
ENCRYPT_NICE = 10


def _yield_cpu() -> None:
    """The calling thread (Linux: a task of its own; the threads it starts inherit it) at
    ENCRYPT_NICE below its process. Elsewhere nothing: a thread id is no process id there."""
    if not sys.platform.startswith("linux"):
        return
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + ENCRYPT_NICE)
    except (AttributeError, OSError):
        pass  # (elsewhere: the thread keeps its priority)


def finish(g: Growing) -> tuple[str, Path]:
    """Wait for the whole ciphertext: (plaintext sha256, its cache path), the stage linking
    that very file (an identical file's ciphertext cached meanwhile was kept instead of this
    one: the stage then sends that, in full); raises the encryption's error."""
    g.done.wait()
    if g.error is not None:
        raise g.error
    assert g.result is not None
    path = g.result[1]
    try:
        same = g.linked.is_set() and os.path.samefile(path, g.link)
    except OSError:
        same = False
    g.same = same
    if not same:
        g.link.unlink(missing_ok=True)
        try:
            os.link(path, g.link)
        except OSError:
            shutil.copy2(path, g.link)
    return g.result


@dataclass
class Sender:
    """How the growing runs reach the host: the batch's rsync argv maker and runner."""

    remote: Callable[[str], bool]  # runs a command (shell.join'ed) on the host: whether it did
    target: str  # the encrypted copy's dir on the host
    argv: Callable[[Path, str, Path, bool], list[str]]  # (source dir, host dir, files-from, append)
    run: Callable[[list[str]], transfer.RsyncRun]  # runs it (progress shown), -> its outcome
    files: Path  # a scratch file for the runs' file lists
    # `ssh` over the master (none: no follower): the host hashes the file as it grows, and its
    # sha256 there goes to `followed` (transfer/follow.py)
    ssh: list[str] = field(default_factory=list)
    followed: dict[str, str] = field(default_factory=dict)


# the host's half of landing the file: the partial ($1/$2) becomes the real name ($3) only when
# it is a file of the ciphertext's size ($4) and the real name is no dir (mv would move it there)
LAND_SCRIPT = (
    'p=$1/$2; [ -f "$p" ] && [ ! -d "$3" ] && [ "$(stat -c %s -- "$p")" = "$4" ]'
    ' && mv -f -- "$p" "$3" && { rmdir -- "$1" 2>/dev/null; :; }'
)


@dataclass
class Sent:
    """What `send_growing` did: a failed run or None, the literal bytes its runs sent, and
    whether the file landed under its real name on the host (no batch run needed for it)."""

    failed: transfer.RsyncRun | None = None
    literal: int = 0
    landed: bool = False


def send_growing(g: Growing, sender: Sender, complete: Callable[[], None]) -> Sent:
    """rsync what exists of g's ciphertext into the host's partial dir of it, again and again
    while it grows, then `complete()` (the batch's: waits for the whole ciphertext, raises its
    failure), then the rest, and rename it to its real name there (LAND_SCRIPT). -> Sent."""
    out = Sent()
    host = posixpath.join(sender.target, posixpath.dirname(g.rel))
    partial = posixpath.join(host, transfer.PARTIAL_DIR)
    if not g.linked.is_set() or not sender.remote(shell.join(["mkdir", "-p", "--", partial])):
        complete()  # (the batch's own run sends it whole, and says why it cannot)
        return out
    sender.files.write_bytes(g.link.name.encode("utf-8", "surrogateescape") + b"\0")
    real = posixpath.join(host, g.link.name)
    rel = posixpath.join(posixpath.dirname(g.rel), g.link.name)
    with follow.following(
        sender.followed, sender.ssh, [follow.Followed(rel, partial, g.link.name, real)]
    ) as hashed:
        sent, append = 0, False
        while not g.done.is_set() and not children.STOPPING.is_set():
            g.wait_for(sent + 1)
            if g.done.is_set():
                break  # (whole now: the last run below sends the rest)
            sent = g.size()
            if not _run(g, sender, partial, append, out):
                return out
            append = True
        if children.STOPPING.is_set():  # (interrupted between two runs: as rsync's own exit says it)
            out.failed = transfer.RsyncRun(INTERRUPTED, transfer.RsyncStats(), "")
            return out
        complete()
        if not append:  # (whole before a first run: the batch's own run sends it; no dir left behind)
            sender.remote(shell.join(["rmdir", "--", partial]))  # (only an empty one: as mkdir found it)
        if append and g.same and _run(g, sender, partial, True, out):
            script = ["sh", "-c", LAND_SCRIPT, "sh", partial, g.link.name, real, str(g.size())]
            out.landed = sender.remote(shell.join(script))
            if out.landed:
                hashed()
    return out


def _run(g: Growing, sender: Sender, partial: str, append: bool, out: Sent) -> bool:
    """One rsync run of g's stage entry into the host's partial dir; adds to `out`."""
    run = sender.run(sender.argv(g.link.parent, partial, sender.files, append))
    if run.exit_code != 0:
        out.failed = run
        return False
    out.literal += run.stats.literal_bytes
    return True


def monotone(show: Callable[[Any], None], floor: list[int]) -> Callable[[Any], None]:
    """A progress callback that never shows fewer bytes than it showed (a growing file's runs
    each count its bytes from 0)."""

    def keep(u: Any) -> None:
        if u.bytes >= floor[0]:
            floor[0] = u.bytes
            show(u)

    return keep
