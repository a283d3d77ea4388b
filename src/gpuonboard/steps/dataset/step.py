"""`DatasetStep`, the step the registry names: its arguments (`options`), the transport it
holds open (`session`), and plan / apply / verify, which pick the mode (plain, encrypted,
shards) and hand the work to the modules that own it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from gpuonboard import children, shell, transfer
from gpuonboard.facts.probe import Probe
from gpuonboard.steps.base import Plan, Step, StepArgsError, StepContext, Warm
from gpuonboard.steps.dataset import hostdirs, preflight, scan
from gpuonboard.steps.dataset.common import NOT_IN_PLAIN_ENCRYPTED, NOTHING_SENT, only_dirs, unreadable
from gpuonboard.steps.dataset.lease import give_back_lease, take_lease
from gpuonboard.steps.dataset.leftovers import stopped_note
from gpuonboard.steps.dataset.options import ARGS, parse_options
from gpuonboard.steps.dataset.plain import apply_plain, plan_plain
from gpuonboard.steps.dataset.session import UploadSession, close_master
from gpuonboard.steps.dataset.sharded import plan_shards
from gpuonboard.steps.dataset.shardsend import ShardUpload
from gpuonboard.steps.dataset.work import Work
from gpuonboard.transfer import crypto, shardstream, uploadlock


class _Option:
    """A DatasetStep attribute that reads its options' field of the same name."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, step: Any, owner: type | None = None) -> Any:
        return self if step is None else getattr(step.options, self.name)


class DatasetStep(Step):
    """Upload `source` to `<dest>/<name>/` on the host (rsync, resumable, sha256-verified)."""

    name = "dataset"
    read_only = False
    ARGS = ARGS

    # the checked arguments and the paths they name (see options.DatasetOptions)
    source = _Option()
    dest = _Option()
    dirname = _Option()
    copy = _Option()
    target = _Option()
    shards_target = _Option()
    plain_target = _Option()
    decrypt_dir = _Option()
    encrypt = _Option()
    decrypt_on_host = _Option()
    bwlimit = _Option()
    shards = _Option()
    unpack = _Option()

    def __init__(self, args: Mapping[str, Any], label: str | None = None) -> None:
        super().__init__(args, label)
        self.options = parse_options(self.args)
        self._session = UploadSession(self.options)

    @property
    def _early_master(self) -> threading.Thread | None:
        """warm()'s thread that opens the master connection (None once plan took it over)."""
        return self._session.early

    @property
    def _first(self) -> shardstream.Stream | None:
        """Shard mode's first stream, opened ahead (None once apply took it over)."""
        return self._session.first

    def probes(self) -> list[Probe]:
        """rsync present, free space, and the remote listing (plus the plaintext one when decrypting)."""
        return hostdirs.probes(self.options)

    def warm(self, warm: Warm) -> None:
        """Before the login: the local scan starts (it needs no connection), and outside check
        mode the upload's OpenSSH master connection starts at once when the host key is
        recorded already, else as soon as our login verified it (so both overlap the login and
        the fact probe instead of following them)."""
        src = self.options.source_path(warm.project)
        if src is not None:
            transfer.prescan(src)  # (`invoke sync --dataset` started it already)
        if not warm.check and self.options.source and self.options.dest:
            self._session.start_early(warm)

    def release(self) -> None:
        """Close a master connection (and first stream) no apply took over (the host failed
        before it, or there was nothing to send). Never waits for warm()'s thread: what it
        opens after this, it closes itself."""
        self._session.release()

    def plan(self, ctx: StepContext) -> Plan:
        """Plan; outside check mode the OpenSSH master connection of the upload is opened
        meanwhile (started by warm(); its handshake overlaps the login, probe and local scan),
        and closed again when there is nothing to send."""
        o, session = self.options, self._session
        early, session.early = session.early, None
        if early is None and not ctx.check and o.source and o.dest:
            args = (ctx.host, ctx.inventory, ctx.known_hosts, ctx.project)
            early = threading.Thread(target=session.open_master, args=args, daemon=True)
            early.start()
        try:
            if not (o.source and o.dest):
                busy = None
            else:
                busy = hostdirs.lease_busy(ctx, o) if ctx.check else session.take_lock(ctx)
            result = Plan(False, busy, failed=True) if busy else self._plan(ctx)
        finally:  # (should _plan raise, what the thread opened waits in masters for release())
            if early is not None:
                early.join()
        sending = result.changes and not result.failed
        if not sending:
            session.unlock()
        if not (sending and result.data.groups):
            session.drop_first()  # plain mode, or nothing to send
        if early is not None:
            opened = session.masters.pop(ctx.host.name, None)
            if opened is not None and sending:
                result.data.master = opened
            elif opened is not None:
                close_master(opened)
        return result

    def _plan(self, ctx: StepContext) -> Plan:
        """Source present -> rsync on host -> what differs -> free space -> send."""
        o = self.options
        src = o.source_path(ctx.project)
        problem = self._settings_problem(ctx, src)
        if problem or src is None:
            return Plan(False, problem or "no dataset given", failed=True)
        remote = hostdirs.listing(ctx, o, o.target)
        if remote.rsync is None:
            return Plan(
                False,
                "rsync is not installed on the host; install it (apt-get install rsync / dnf install rsync)",
                failed=True,
            )
        # plain mode needs no hash to plan (rsync's quick check): files are hashed during the upload
        try:
            tree = scan.scanned(src)
        except OSError as exc:
            return Plan(False, unreadable(exc, src, NOTHING_SENT), failed=True)
        reserved = scan.reserved_entry(src, tree)
        if reserved:
            return Plan(False, reserved, failed=True)
        hostdirs.same_dir_as_dest(ctx, o)
        partial = scan.partial_dir_entry(src, tree)
        if partial:
            return Plan(False, partial, failed=True)
        work = Work(tree, [], o.target)
        entries = tree.entries
        if not entries and (o.encrypt or not tree.empty_dirs) and not (o.shards or o.unpack):
            # (rsync never ran: "up to date at" named a copy that may not even exist there)
            where = o.target if o.encrypt else tree.landing(o.target)
            what = "is empty"
            if tree.empty_dirs:
                what = f"holds {only_dirs(tree.empty_dirs, tree.specials)}, {NOT_IN_PLAIN_ENCRYPTED}"
            return Plan(
                False,
                f"the dataset {src} {what}; nothing sent (what {ctx.host.name}:{where} holds"
                f" is left as it is){scan.local_notes(tree)}",
                diff={"sent": 0},
            )
        if o.sharded(ctx.host, len(entries)):
            return plan_shards(ctx, o, self.label, src, work)
        return plan_plain(ctx, o, src, work, remote)

    def _settings_problem(self, ctx: StepContext, src: Path | None) -> str | None:
        """Why the plan fails before looking at the host: no dataset, or it is missing; a wrong
        upload_probe setting; no data dir. Else None."""
        if src is None:
            return "no dataset given: set vars.dataset or pass --dataset PATH"
        if not src.exists():
            return f"dataset source {src} does not exist"
        try:
            preflight.probe_mode(ctx, self.options)
        except StepArgsError as exc:
            return f"{exc} (vars.upload_probe or the step's upload_probe)"
        try:
            preflight.probe_timeout(ctx, self.options)
        except StepArgsError as exc:
            return f"{exc} (vars.upload_probe_timeout or the step's upload_probe_timeout)"
        try:
            self.options.threshold(ctx.host)
        except StepArgsError as exc:
            return f"{exc} (vars.shard_threshold or the step's shard_threshold)"
        if not self.options.dest:
            return "no remote data dir: set data_dir for the host (or its vendor) or pass --dest"
        return None

    def apply(self, ctx: StepContext, plan: Plan) -> Any:
        """rsync, verify by sha256 on the host, re-send mismatches once, decrypt on the host."""
        work: Work = plan.data
        why = None
        if work.master is None:  # planned outside this process's plan() (or it could not start)
            why = self._session.open_master(ctx.host, ctx.inventory, ctx.known_hosts, ctx.project)
            work.master = self._session.masters.pop(ctx.host.name, None)
        if work.master is None:
            self._session.unlock()
            return why or "cannot write the OpenSSH config for the upload under .gpuonboard/ssh/"
        cfg, alias, _control, work.ssh_opts = work.master
        try:  # (the lease and the probe too: any end closes the master)
            refused = self._hold_lease(ctx, work)
            if refused:
                return refused
            out, start = self._send(ctx, plan, work, cfg, alias)
        finally:
            self._close(ctx, work)
        literal = (plan.diff or {}).get("literal_bytes", 0)
        took = time.monotonic() - start
        if out is None and literal and took > 0:
            plan.msg += f" (achieved {literal * 8 / took / 1e6:.0f} Mbit/s)"
        return out

    def _hold_lease(self, ctx: StepContext, work: Work) -> str | None:
        """Take the host's lease (kept fresh by a heartbeat, given back on an interrupt), claim
        --decrypt-to's dir; the failure sentence, or None."""
        o = self.options
        # the plaintext tree this run writes (checked for another copy's mark with the lease):
        # an unpack's or a decryption's, or plain mode's copy itself; none for --shards alone
        if work.unpack or o.decrypt_on_host:
            tree = o.plain_target
        else:
            tree = o.target if work.enc is None and not work.groups else ""
        work.lease, refused = take_lease(ctx, o, work, tree)
        if work.lease is None:
            return refused
        lease = work.lease
        work.on_interrupt = children.on_interrupt(lambda: give_back_lease(ctx, lease, timeout=5))
        if o.decrypt_dir:
            taken = hostdirs.claim_plain_dir(ctx, o, work.lease)
            if taken:
                return taken
        if work.enc is not None:  # what a killed earlier run left half-encrypted
            crypto.sweep_dead_temps(o.cache_dir(ctx))
        assert work.master is not None
        cfg, alias, _control, _opts = work.master
        refresh = uploadlock.touch_command(work.lease)
        work.beat = uploadlock.Heartbeat([*work.ssh_argv(cfg, alias), shell.login_neutral(refresh)])
        return None

    def _send(self, ctx: StepContext, plan: Plan, work: Work, cfg: Path, alias: str) -> tuple[Any, float]:
        """The upload itself, in its mode, once the lease is held. -> (apply's result, when
        its first byte went)."""
        start = time.monotonic()
        if not (work.groups or work.send or work.decrypt or work.mkdirs or work.dec_temps):
            # only an interrupted upload's leftovers to remove: the lease did
            plan.msg = plan.msg.replace("; remove ", "; removed ", 1) + stopped_note(work.stopped)
            return None, start
        assert work.master is not None
        if ctx.progress:  # (before the first byte: the room it takes, a temporary tree's included)
            space = preflight.space_line(self.options, work.room, work.room_note)
            ctx.progress(f"step {self.label}: {space}")
        eta = preflight.preflight(ctx, self.options, self.label, work.need, work.master)
        start = time.monotonic()
        if work.groups:
            first = self._session.take_first()
            upload = ShardUpload(ctx, self.options, self.label, work, first, self._session.spawn_stream)
            out = upload.run(plan, eta)
        else:
            out = apply_plain(ctx, self.options, self.label, plan, work, cfg, alias, eta)
        if out is None:
            plan.msg += stopped_note(work.stopped)
        return out, start

    def _close(self, ctx: StepContext, work: Work) -> None:
        """However apply ended: stop the heartbeat, give the lease back (when still ours), close
        the master connection, unlock, remove this run's local temp files."""
        if work.beat is not None:
            work.beat.stop()
        if work.lease is not None:  # (None too when the host's closing work goes on without us)
            give_back_lease(ctx, work.lease)
        if work.on_interrupt is not None:  # (only now: an interrupt's main thread runs it
            children.done(work.on_interrupt)  # meanwhile, before it cuts this connection)
        assert work.master is not None
        close_master(work.master)
        self._session.unlock()
        for temp in work.temps:
            temp.unlink(missing_ok=True)

    def _progress(
        self, ctx: StepContext, base: list[int] | None = None, total: int = 0
    ) -> Callable[[transfer.ProgressUpdate], None]:
        """rsync's progress line for this step (see preflight.rsync_progress)."""
        return preflight.rsync_progress(self.label, ctx, base, total)

    def verify(self, ctx: StepContext, plan: Plan, applied: Any) -> str | None:
        """apply returns the problem sentence, or None when everything arrived verified."""
        return applied if isinstance(applied, str) else None
