"""--decrypt-on-host in plain encrypted mode: the host decrypts the ciphertexts that arrived
into the plaintext dir (the identity streamed over stdin, never a file), in batches, and the
plaintext is verified by sha256; the temp files a decryption cut short there left are removed
first."""

from __future__ import annotations

import os
import posixpath
import re

from gpuonboard import sh, shell, transfer
from gpuonboard.steps.base import StepContext, last_line
from gpuonboard.steps.dataset.common import shown
from gpuonboard.steps.dataset.options import DatasetOptions
from gpuonboard.steps.dataset.verify import mismatches, unverified
from gpuonboard.steps.dataset.work import Work
from gpuonboard.transfer import crypto, shardstream
from gpuonboard.transfer.scanstore import touch_time

# $1 the plaintext dir, then (ciphertext, plaintext path, mtime, mode) per file; the identity on
# stdin (the mode is the local file's, as rsync -a keeps it: a temp file is made 0600).
# Each file's way is made of real dirs: a symlink or file an earlier upload left on it is
# replaced (as rsync replaces them), so nothing is ever written through a symlink (outside the
# data dir); a directory where the dataset now has a file is refused (exit 4, one line).
DECRYPT_SCRIPT = shardstream.AGE_ERROR_FN + "\n" + sh.load("dataset_decrypt")
DECRYPT_KILLED = 5  # DECRYPT_SCRIPT's exit status when age was killed by a signal
DECRYPT_TEMP = re.compile(r"\.gpuonboard-dec\.[A-Za-z0-9]{8}(\.err)?")  # DECRYPT_SCRIPT's mktemp names
# $1 the plaintext dir; stdin: NUL-terminated paths in it of DECRYPT_SCRIPT's temp files
REMOVE_TEMPS_SCRIPT = 'cd -- "$1" 2>/dev/null || exit 0; xargs -0 -r rm -f --'
DECRYPT_BATCH = 64 * 1024  # bytes of quoted paths per decryption command (one argument: <= 128 KiB)


def decrypt_temp(rel: str) -> bool:
    """Pure: rel is a temp file of DECRYPT_SCRIPT (a decryption into it was cut short)."""
    return DECRYPT_TEMP.fullmatch(posixpath.basename(rel)) is not None


def decrypt_killed(status: int, last: str) -> str:
    """Pure: the sentence for a decryption on the host stopped by a signal (its command, or age
    in it): not a wrong identity or a damaged file; what was decrypted stays, the rerun goes on."""
    why = last if status == DECRYPT_KILLED else f"its command ended with status {status}"
    return (
        f"the decryption on the host was stopped by a signal ({why}: the host's OOM killer, a"
        " reboot or a kill), not by a wrong key or a damaged file; rerun to decrypt the rest"
        " (what arrived is not sent again)"
    )


def perms(tree: transfer.SourceTree, rel: str) -> str:
    """The local file's permission bits in octal, for its plaintext on the host (644 when gone)."""
    try:
        return f"{os.lstat(tree.path(rel)).st_mode & 0o777:o}"
    except OSError:
        return "644"


def decrypt(ctx: StepContext, opts: DatasetOptions, work: Work) -> str | None:
    """Decrypt on the host: identity on stdin (kept in a shell variable, never a file),
    each file into a temp name, renamed only when age succeeded; mtime set like the source's, to
    the nanosecond (as rsync -a sets it: the host's list of what uploads wrote holds its second).
    In batches of at most DECRYPT_BATCH bytes of arguments (a command line's one argument
    holds 128 KiB: a few hundred files)."""
    todo = work.decrypt or work.tree.files
    batch: list[str] = []
    size = 0
    for k, e in enumerate(todo):
        cipher = posixpath.join(work.target, e.rel + ".age")
        one = [cipher, posixpath.join(opts.plain_target, e.rel), touch_time(e), perms(work.tree, e.rel)]
        batch += one
        size += sum(len(shell.quote(a).encode("utf-8", "surrogateescape")) + 1 for a in one)
        if size < DECRYPT_BATCH and k + 1 < len(todo):
            continue
        r = ctx.runner.run(
            shell.join(["sh", "-c", DECRYPT_SCRIPT, "sh", opts.plain_target, *batch]),
            # the key lines alone, stripped (age refuses an indented or commented-out one)
            stdin="".join(k + "\n" for k in crypto.identity_keys(work.identity.reveal())).encode(),
            timeout=3600,
        )
        batch, size = [], 0
        if not r.ok:
            return _decrypt_failure(opts, r.stderr, r.exit_code)
    plain = {e.rel: work.tree.entries[e.rel].sha256 for e in todo}  # hashed while encrypting
    bad = mismatches(ctx, opts.plain_target, plain)
    if bad:  # (their size and mtime are the source's: without this the rerun said "up to date")
        unverified(ctx, opts.plain_target, bad)
        return f"decrypted files differ from the source: {', '.join(bad[:5])}"
    return None


def _decrypt_failure(opts: DatasetOptions, stderr: str, status: int) -> str:
    """The sentence for a decryption command on the host that failed."""
    last = last_line(stderr, status)
    if status == 4:  # the way to a file (see DECRYPT_SCRIPT), not the decryption
        return f"cannot put the decrypted files in place on the host: {last}"
    if status > 128 or status == DECRYPT_KILLED:  # no key or data fault
        return decrypt_killed(status, last)
    full = transfer.disk_full_line(stderr.splitlines())
    if full:  # (the plan checked the room: another writer took it meanwhile)
        return (
            f"the plaintext's disk on the host is full ({full.strip()}): free space under"
            f" {shown(posixpath.dirname(opts.plain_target))} there, then rerun (the ciphertexts"
            " are on the host: nothing is sent again)"
        )
    why = "wrong identity, or tampered/truncated ciphertext"
    return f"decryption on the host failed ({why}): {last}"


def remove_decrypt_temps(ctx: StepContext, opts: DatasetOptions, work: Work) -> str | None:
    """Remove the temp files (partial plaintext) of a decryption cut short on the host (its
    command killed: an OOM kill, a reboot), which no later run would otherwise touch; paths
    on stdin, NUL-terminated (any byte but NUL in a name)."""
    r = ctx.runner.run(
        shell.join(["sh", "-c", REMOVE_TEMPS_SCRIPT, "sh", opts.plain_target]),
        stdin=b"".join(rel.encode("utf-8", "surrogateescape") + b"\0" for rel in work.dec_temps),
    )
    if not r.ok:
        last = last_line(r.stderr, r.exit_code)
        return f"cannot remove the temp files a cut-short decryption left on the host: {last}"
    return None
