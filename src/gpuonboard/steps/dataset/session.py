"""What one dataset step holds open across warm, plan, apply and release (`UploadSession`):
the upload's own OpenSSH master connection (started before the login when it may be, so its
handshake overlaps the login and the fact probe), shard mode's first stream opened ahead, and
this machine's lock on the host's copy; closed by whoever is last, however the host's run ended."""

from __future__ import annotations

import contextlib
import posixpath
import shutil
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from gpuonboard import shell, transfer
from gpuonboard.connection import openssh
from gpuonboard.steps.base import StepArgsError, StepContext, Warm
from gpuonboard.steps.dataset.options import DatasetOptions
from gpuonboard.steps.dataset.work import Master
from gpuonboard.transfer import shardstream, uploadlock

if TYPE_CHECKING:
    from gpuonboard.inventory import Host, Inventory


def close_master(opened: Master) -> None:
    """Stop the master connection and remove its private socket dir."""
    cfg, alias, control, opts = opened
    transfer.stop_master(cfg, alias, opts)
    shutil.rmtree(control, ignore_errors=True)
    transfer.sweep_control_dirs(control.parent)  # (what runs killed with SIGKILL left)


class UploadSession:
    """The master connections, first stream and upload lock of one dataset step."""

    def __init__(self, opts: DatasetOptions) -> None:
        self.opts = opts
        self.masters: dict[str, Master] = {}
        self.early: threading.Thread | None = None  # started by warm()
        self.first: shardstream.Stream | None = None  # shard mode's first stream, opened ahead
        self._lock = threading.Lock()  # _released vs. what warm()'s thread opens
        self._released = False
        self._upload_lock: uploadlock.UploadLock | None = None  # held from plan to the end of apply

    def start_early(self, warm: Warm) -> None:
        """Outside check mode: start the upload's OpenSSH master connection at once when the
        host key is recorded already, else as soon as our login verified it (a thread)."""

        def open_master() -> None:
            # a host whose key is recorded already: at once (OpenSSH checks it strictly
            # against the same known_hosts); else once our login verified and recorded it
            if not warm.key_known():
                warm.settled.wait()
            if warm.connected or not warm.settled.is_set():
                self.open_master(warm.host, warm.inventory, warm.known_hosts, warm.project)
                opened = self.masters.get(warm.host.name)
                if opened is not None and opened[3] and self._may_shard(warm):
                    # shard mode's first stream too: it waits for its header (see
                    # shardstream.receive_command), so an unused one changes nothing
                    with contextlib.suppress(OSError):
                        self.first = self.spawn_stream(opened, 0)
            with self._lock:
                late = self._released
            if late:  # the host's run ended meanwhile: close what was just opened
                self.release()

        self.early = threading.Thread(target=open_master, daemon=True)
        self.early.start()

    def _may_shard(self, warm: Warm) -> bool:
        """Whether this upload may go in shard mode, so that its first stream is worth opening
        ahead: --shards or --unpack; in auto mode, the local scan's file count once that scan
        has ended (a plain upload's stream was opened and closed unused), until then yes."""
        o = self.opts
        if o.shards is False:
            return False
        src = o.source_path(warm.project)
        tree = transfer.prescanned(src) if src is not None else None
        try:
            return tree is None or o.sharded(warm.host, len(tree.entries))
        except StepArgsError:  # (a bad shard_threshold: the plan says so)
            return False

    def open_master(
        self, host: Host, inventory: Inventory | None, known_hosts: Path | None, project: Path
    ) -> str | None:
        """Write the host's OpenSSH config and start the master (see transfer.start_master);
        -> why that cannot be done (one sentence), else None. (Run in a thread too: it never raises.)"""
        known = known_hosts or Path(".gpuonboard/known_hosts")
        config = openssh.write_for(host, inventory, known, project, "the upload")
        if isinstance(config, str):
            return config
        cfg, alias = config
        try:
            # the socket: a private 0700 temp dir with a SHORT path (a unix socket path holds
            # ~100 bytes; a socket under a deep project dir would not fit)
            control = Path(tempfile.mkdtemp(prefix=transfer.CONTROL_PREFIX))
            opts = transfer.start_master(cfg, alias, control)
        except Exception as exc:  # noqa: BLE001 - said by apply, never a thread's traceback
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            return (
                f"cannot make a private directory for the upload's SSH connection in"
                f" {tempfile.gettempdir()} ({why}); free space there (or set TMPDIR to a writable"
                " directory), then rerun"
            )
        self.masters[host.name] = (cfg, alias, control, opts)
        return None

    def spawn_stream(self, master: Master, n: int) -> shardstream.Stream:
        """Open the n-th shard stream of this run over the master connection."""
        cfg, alias, _control, opts = master
        o = self.opts
        unpack_dir = o.unpack_dir() if o.unpack or o.decrypt_on_host else ""
        part = shardstream.part_name(n)
        command = shardstream.receive_command(o.shards_target, part, unpack_dir, o.encrypt, n == 0)
        command = shell.join(["env", o.marker()]) + " " + command
        return shardstream.Stream(["ssh", "-F", str(cfg), *opts, alias, shell.login_neutral(command)])

    def release(self) -> None:
        """Close a master connection (and first stream) no apply took over (the host failed
        before it, or there was nothing to send). Never waits for warm()'s thread: what it
        opens after this, it closes itself."""
        with self._lock:
            self._released = True
            first, self.first = self.first, None
            masters = [self.masters.pop(name) for name in list(self.masters)]
        self.unlock()
        if first is not None:
            first.close()
        for opened in masters:
            close_master(opened)

    def take_lock(self, ctx: StepContext) -> str | None:
        """This machine's lock on the host's copy of the dataset (see uploadlock); the
        failure sentence when another run holds it."""
        base = posixpath.join(self.opts.dest, self.opts.dirname)
        name = uploadlock.lock_name(ctx.host.address, ctx.host.port, ctx.host.user, base)
        try:
            self._upload_lock = uploadlock.acquire(ctx.project / ".gpuonboard" / "locks", name)
        except uploadlock.UploadBusy as busy:
            return (
                f"another gpuonboard upload to {ctx.host.name}:{base} is running on this machine"
                f" ({busy}); wait for it to finish (or stop it), then rerun"
            )
        except OSError as exc:
            where = ctx.project / ".gpuonboard" / "locks"
            return f"cannot create the upload lock under {where}: {exc.strerror or exc}; check that directory"
        return None

    def unlock(self) -> None:
        """Give this machine's upload lock back (when held)."""
        with self._lock:  # release() may run twice at once (the host's end, warm()'s late path)
            held, self._upload_lock = self._upload_lock, None
        if held is not None:
            held.release()

    def take_first(self) -> shardstream.Stream | None:
        """Shard mode's first stream, opened ahead (apply takes it over), or None."""
        first, self.first = self.first, None
        return first

    def drop_first(self) -> None:
        """Close the first stream opened ahead (nothing will use it)."""
        first = self.take_first()
        if first is not None:
            first.close()
