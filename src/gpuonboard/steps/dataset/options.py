"""The dataset step's arguments (`ARGS`), checked once when the playbook is loaded, and the
places on the host and on this machine they name (`DatasetOptions`): the copy, its
ciphertext and shard stores, the plaintext dir, the local caches; plus the settings a step
argument or a host variable gives (`setting`, the link speed)."""

from __future__ import annotations

import os
import posixpath
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuonboard import termtext, transfer
from gpuonboard.inventory.fields import system_tree
from gpuonboard.steps.base import StepArgsError, StepContext, truthy
from gpuonboard.steps.dataset.common import ENCRYPTED_SUFFIX, MAX_NAME, SHARDS_SUFFIX, one_spelling, ours
from gpuonboard.transfer import shards, uploadlock

if TYPE_CHECKING:
    from gpuonboard.inventory import Host

ARGS = {
    "source": "local dataset path (default vars.dataset)",
    "dest": "remote data directory (default the host's data_dir)",
    "name": "directory name under dest (default the source's base name)",
    "encrypt": "upload age ciphertexts (recipients vars.age_recipients or vars.age_passphrase_env)",
    "decrypt_on_host": "decrypt on the host into <dest>/<name>/ (identity streamed over stdin)",
    "decrypt_dir": "decrypt into <decrypt_dir>/<name>/ instead, e.g. /dev/shm (tmpfs: RAM only)",
    "bwlimit": "rsync --bwlimit value, e.g. 5m",
    "cache_dir": "local cache of ciphertexts (default .gpuonboard/cache/encrypted)",
    "shards": "pack into tar shards: true, false, or auto (default: above shard_threshold files)",
    "shard_threshold": "auto: shard mode above this many files (default vars.shard_threshold, 10000)",
    "shard_size": "shard size (default vars.shard_size, 256MiB)",
    "unpack": "shard mode: unpack the shards into <dest>/<name>/ on the host (temp dir, then renamed)",
    "keep_shards": "--unpack: keep the shards on the host after the unpack (a cache that lets a damaged"
    " tree be unpacked again without sending; default vars.keep_shards, false: removed once the tree"
    " is verified)",
    "verify": "re-hash every dataset file already on the host (sha256) and send again what differs"
    " (plain mode): rsync's quick check (size, mtime) misses a file changed on the host in place",
    "upload_mbit": "link speed for the ETA when no probe runs (default vars.upload_mbit, 100)",
    "upload_probe": "measure the upload speed for the ETA: auto (uploads of 200 s or more), true, false",
    "upload_probe_timeout": "seconds a round of the upload probe may take, then it gives up (default 15)",
}
CONTROL_CHARS = "(\\n, \\r, \\t, ESC, a Unicode line separator ...)"


@dataclass
class DatasetOptions:
    """The step's arguments, checked, and the paths they name. `decrypt_dir` and
    `plain_target` change once, when the plan finds --decrypt-to to be the data dir itself."""

    args: Mapping[str, Any]  # the step's own (Step.args)
    source: str
    dest: str
    dirname: str
    copy: str  # <dest>/<name>: this copy, as the messages name it
    target: str  # where rsync writes: the copy, or its .encrypted store
    shards_target: str  # <dest>/<name>.shards
    plain_target: str  # the plaintext tree: the copy, or <decrypt_dir>/<name>
    decrypt_dir: str
    encrypt: bool
    decrypt_on_host: bool
    bwlimit: str | None
    shards: bool | None  # None: auto
    unpack: bool
    unpack_token: str  # this run's, in its unpack dir's name and its processes' marker

    def setting(self, ctx: StepContext, name: str, default: Any) -> Any:
        """The step's argument `name`, else the host's variable of that name, else `default`."""
        return self.host_setting(ctx.host, name, default)

    def host_setting(self, host: Host, name: str, default: Any) -> Any:
        """`setting` for `host`, before there is a connection (see step.warm)."""
        value = self.args.get(name)
        if value in (None, ""):
            value = host.vars.get(name)
        return default if value in (None, "") else value

    def threshold(self, host: Host) -> int:
        """Auto mode: shard mode above this many files (`shard_threshold`, the step's argument
        or the host's variable, default 10,000; below 0: every upload); StepArgsError for anything
        but a whole number."""
        value = self.host_setting(host, "shard_threshold", shards.DEFAULT_THRESHOLD)
        try:  # (what int() reads, as before: "10_000", " 500 ", 10000.0; not True or 2.5)
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError(value)
            return int(value)
        except (TypeError, ValueError, OverflowError):
            raise StepArgsError(f"shard_threshold must be a whole number of files, not {value!r}") from None

    def sharded(self, host: Host, files: int) -> bool:
        """Whether an upload of `files` files goes in shard mode: --shards or --unpack, or in
        auto mode more files than the threshold."""
        return bool(self.shards or self.unpack or (self.shards is None and files > self.threshold(host)))

    def keeps_shards(self, ctx: StepContext) -> bool:
        """--unpack: whether the shards stay on the host after the unpack (`keep_shards`, step
        argument or host variable; default false: removed once the unpacked tree is verified)."""
        return truthy(self.setting(ctx, "keep_shards", False), "keep_shards")

    def link_mbit(self, ctx: StepContext) -> float:
        """The configured link speed (`upload_mbit`), capped by --bwlimit."""
        mbit = transfer.parse_rate_mbit(self.setting(ctx, "upload_mbit", transfer.DEFAULT_MBIT))
        return self.cap(mbit or transfer.DEFAULT_MBIT)

    def cap(self, mbit: float) -> float:
        """A rate in Mbit/s, capped by --bwlimit."""
        limit = transfer.parse_rate_mbit(self.bwlimit) if self.bwlimit else None
        return min(mbit, limit) if limit else mbit

    def cache_dir(self, ctx: StepContext) -> Path:
        """The local cache of ciphertexts."""
        custom = self.args.get("cache_dir")
        return Path(custom) if custom else ctx.project / ".gpuonboard" / "cache" / "encrypted"

    @staticmethod
    def hash_cache_dir(ctx: StepContext, root: Path) -> Path:
        """The dataset's local cache dir (hash cache, shard index)."""
        return ctx.project / ".gpuonboard" / "cache" / "shards" / shards.dataset_id(root)

    def source_path(self, project: Path) -> Path | None:
        """The dataset on this machine (relative to the project; a link to one file: that file)."""
        if not self.source:
            return None
        src = Path(os.path.expanduser(self.source))
        src = src if src.is_absolute() else project / src
        if src.is_symlink() and src.is_file():  # a link to one file: that file (its content)
            return src.resolve()
        return src

    def copy_tag(self) -> str:
        """This copy's tag in the names of its unpack dirs and processes on the host."""
        return uploadlock.unpack_tag(self.copy)

    def unpack_dir(self) -> str:
        """The temp dir shard mode unpacks into, beside the plaintext target."""
        parent = posixpath.dirname(self.plain_target.rstrip("/")) or "/"
        # named after the dataset and its copy: a run sweeps only its own copy's leftovers (the
        # lease keeps other runs of this copy out), never another's live unpack in the same dir
        name = f".{self.dirname}.gpuonboard-unpack-{self.copy_tag()}-{self.unpack_token}"
        return posixpath.join(parent, name)

    def marker(self) -> str:
        """What this run's processes on the host carry in their environment (uploadlock.mark):
        a rerun holding the lease finds and stops them should this run's link drop."""
        return uploadlock.mark(self.copy_tag(), self.unpack_token)


def parse_options(args: Mapping[str, Any]) -> DatasetOptions:
    """The step's arguments checked (StepArgsError, in the order a user meets them) and the
    paths they name."""
    unpack_token = secrets.token_hex(6)
    source = str(args.get("source") or "")
    dest = _dest(args)
    encrypt = truthy(args.get("encrypt"), "encrypt")
    decrypt_on_host = truthy(args.get("decrypt_on_host"), "decrypt_on_host")
    if decrypt_on_host and not encrypt:
        raise StepArgsError("decrypt_on_host needs encrypt")
    bwlimit = _bwlimit(args)
    dirname = _dirname(args.get("name") or os.path.basename(source.rstrip("/")) or "dataset", dest)
    base = posixpath.join(dest, dirname) if dest else ""
    decrypt_dir = _decrypt_dir(args, decrypt_on_host)
    if decrypt_dir and decrypt_dir == dest:  # (both in one spelling)
        decrypt_dir = ""  # the data dir itself: what decrypting there does anyway
    plain_target = posixpath.join(decrypt_dir, dirname) if decrypt_dir else base
    _outside_system_trees(base, plain_target, bool(args.get("name")))
    mode = str(args.get("shards", "auto")).lower()
    shard_mode = None if mode in ("auto", "none", "") else truthy(args.get("shards"), "shards")
    unpack = truthy(args.get("unpack"), "unpack")
    truthy(args.get("keep_shards"), "keep_shards")  # (checked here: read when planning, see keeps_shards)
    if unpack and shard_mode is False:
        raise StepArgsError("unpack needs shard mode")
    return DatasetOptions(
        args=args,
        source=source,
        dest=dest,
        dirname=dirname,
        copy=base,
        target=base + (ENCRYPTED_SUFFIX if encrypt else ""),
        shards_target=base + SHARDS_SUFFIX if dest else "",
        plain_target=plain_target,
        decrypt_dir=decrypt_dir,
        encrypt=encrypt,
        decrypt_on_host=decrypt_on_host,
        bwlimit=bwlimit,
        shards=shard_mode,
        unpack=unpack,
        unpack_token=unpack_token,
    )


def _dest(args: Mapping[str, Any]) -> str:
    """`dest`: absolute, without '..', in one spelling ('' when not given)."""
    dest = str(args.get("dest") or "")
    if dest and not dest.startswith("/"):  # "~/x" would make a dir named "~"
        raise StepArgsError(
            f"dest (--dest or the host's data_dir) must be an absolute path on the host, like /data,"
            f" not {dest!r}"
        )
    if ".." in dest.split("/"):  # the host resolves it, a probe of a missing dir cannot
        raise StepArgsError(f"dest must be spelt without '..', not {dest!r}")
    # one spelling per dir (`/data//x`, `/data/x/.`): the unpack marker is keyed by the path
    return one_spelling(dest)


def _outside_system_trees(copy: str, plain: str, named: bool) -> None:
    """StepArgsError where the copy (or the plaintext --decrypt-to makes) would be a directory
    of the host's operating system or one in it: `--dest / --dataset ./etc` wrote into /etc,
    replacing its files of the same names (rsync -a merges into a directory that exists)."""
    for what, path, flag in (("copy", copy, "--dest"), ("plaintext", plain, "--decrypt-to")):
        tree = system_tree(path) if path else None
        if tree is None:
            continue
        name = " or another --name" if named else " or name the copy otherwise with --name"
        raise StepArgsError(
            f"the dataset's {what} would be {path}, in the host's system directory {tree}, which an"
            " upload never writes into (rsync merges into a directory that exists, replacing its"
            f" files of the same names); give {flag} a data directory like /data{name}"
        )


def _bwlimit(args: Mapping[str, Any]) -> str | None:
    """`bwlimit`: a rate rsync takes, at least 1 KiB/s (or 0); None when not given."""
    bw = args.get("bwlimit")
    bwlimit = str(bw) if bw not in (None, "") else None
    if bwlimit and not re.fullmatch(r"[0-9]{1,9}(\.[0-9]{1,3})?[kKmMgG]?[bB]?", bwlimit):
        raise StepArgsError(f"bwlimit must be a rate like 500k or 5m, not {bwlimit!r}")
    mbit = transfer.parse_rate_mbit(bwlimit) if bwlimit else None
    if mbit is not None and 0 < mbit * 1e6 / 8 < 1024:  # (rsync refuses it, after connecting)
        raise StepArgsError(f"bwlimit must be at least 1k (1 KiB/s), or 0 for none, not {bwlimit!r}")
    return bwlimit


def _dirname(name: Any, dest: str) -> str:
    """The copy's directory name: one name, printable, none of gpuonboard's own, short enough."""
    if "/" in str(name) or str(name) in (".", ".."):
        raise StepArgsError(f"name must be one directory name, not {name!r}")
    for what, text in (("name", str(name)), ("dest", dest)):
        # (the host's replies are read line by line; a control character such as ESC would
        # reach the terminal in every message)
        if termtext.control_char(text):
            flag = "pick another with --name" if what == "name" else "pick another"
            raise StepArgsError(
                f"{what} must not hold a line break or another control character {CONTROL_CHARS},"
                f" not {text!r}; {flag}"
            )
    if ours(str(name)):  # (a copy of that name would pass for a lease, mark or unpack dir)
        raise StepArgsError(
            f"name must not be one gpuonboard uses for its own files on the host (.gpuonboard-copy,"
            f" .<name>.gpuonboard-upload, .<name>.gpuonboard-unpack-*), not {name!r}; pick another"
            " with --name"
        )
    if str(name).endswith((ENCRYPTED_SUFFIX, SHARDS_SUFFIX)):  # another copy's store's name
        raise StepArgsError(
            f"name must not end in {ENCRYPTED_SUFFIX} or {SHARDS_SUFFIX} (where gpuonboard keeps the"
            f" ciphertexts and shards of the dataset named without it), not {name!r}; pick another"
            " with --name"
        )
    size = len(str(name).encode("utf-8", "surrogateescape"))
    if size > MAX_NAME:  # the unpack dir beside the copy adds up to 41 bytes to it
        raise StepArgsError(
            f"name must be at most {MAX_NAME} bytes (a host's file names hold 255, and gpuonboard"
            f" adds up to {255 - MAX_NAME} to it for its own files), not {size}; pick a shorter one"
            " with --name"
        )
    return str(name)


def _decrypt_dir(args: Mapping[str, Any], decrypt_on_host: bool) -> str:
    """`decrypt_dir`: only with decrypt_on_host; absolute, without '..', printable, one spelling."""
    decrypt_dir = str(args.get("decrypt_dir") or "")
    if decrypt_dir and not decrypt_on_host:
        raise StepArgsError("decrypt_dir needs decrypt_on_host")
    if decrypt_dir and not decrypt_dir.startswith("/"):
        raise StepArgsError(f"decrypt_dir must be an absolute path on the host, not {decrypt_dir!r}")
    if ".." in decrypt_dir.split("/"):
        raise StepArgsError(f"decrypt_dir must be spelt without '..', not {decrypt_dir!r}")
    if termtext.control_char(decrypt_dir):  # (the host's replies and its record are read by line)
        raise StepArgsError(
            f"decrypt_dir must not hold a line break or another control character {CONTROL_CHARS},"
            f" not {decrypt_dir!r}; pick another"
        )
    return one_spelling(decrypt_dir)
