"""`teardown_pull`: the results dir pulled back with rsync (the transfer's pull command line,
over the host's own SSH settings) and every file verified against the host's sha256 before
anything is deleted."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuonboard import transfer
from gpuonboard.connection import openssh
from gpuonboard.facts.probe import Probe
from gpuonboard.steps.base import Plan, Step, StepArgsError, StepContext, last_line, truthy
from gpuonboard.steps.teardown.checks import (
    TreeChecks,
    manifest_command,
    parse_pull_output,
    pull_probe_command,
    records,
    unhashed,
)
from gpuonboard.steps.teardown.common import (
    check_dir_arg,
    copy_dir,
    describe_problems,
    path_problem,
    probe_name,
)
from gpuonboard.steps.teardown.localcopy import (
    drop_links_out,
    exposed_dest,
    foreign_dest,
    free_bytes,
    held_bytes,
    mark_stale,
    room_problem,
)
from gpuonboard.steps.teardown.records import (
    RECORD,
    Owner,
    Record,
    host_key,
    mark_pulling,
    read_record,
    write_record,
)
from gpuonboard.transfer import compare_manifests, local_manifest
from gpuonboard.units import format_bytes

if TYPE_CHECKING:
    from gpuonboard.inventory import Inventory


@dataclass
class PullOutcome:
    """What rsync and the manifest comparison found."""

    rsync_code: int
    rsync_error: str
    remote: dict[str, str]
    missing: list[str]
    corrupt: list[str]
    manifest_error: str = ""
    listing: list[str] = field(default_factory=list)
    checks: TreeChecks = field(default_factory=TreeChecks)
    local_error: str = ""
    mark_error: str = ""  # the mark of this pull could not be written (disk full): nothing pulled
    config_error: str = ""  # rsync's OpenSSH config could not be written: nothing made or pulled
    no_room: str = ""  # why rsync could not write here: the disk (or the user's quota) filled up


# what rsync's receiver says when this machine's disk (or the user's quota) is full
_NO_ROOM = ("No space left on device", "Disk quota exceeded")


class TeardownPullStep(Step):
    """Pull the results dir back with rsync and verify every file against a host-side sha256."""

    name = "teardown_pull"
    read_only = False
    ARGS = {
        "results": "remote results/checkpoint directory to pull ('' = nothing to pull)",
        "dest": "local directory (default results/<host> under the project; '{host}' is replaced)",
        "force": "continue (delete later) even when the pull is incomplete or unverified",
        "known_hosts": "known_hosts file rsync's ssh uses (default .gpuonboard/known_hosts)",
        "inventory": "inventory path, to resolve jump hosts given by name",
        "removed": "the other dirs teardown removes (teardown_files' paths): a symlink in the results"
        " into one of them is refused, one to anywhere else is copied as a link (unset: any symlink"
        " out of the results is refused)",
        "recorded_uploads": "with `removed`: the uploads `sync` recorded on the host (removed by"
        " teardown_files' recorded_uploads) count as removed dirs too",
    }

    def __init__(self, args: Mapping[str, Any], label: str | None = None) -> None:
        super().__init__(args, label)
        self.results = check_dir_arg(self.args.get("results"), "results")
        self.force = truthy(self.args.get("force", False), "force")
        raw = self.args.get("removed")
        if isinstance(raw, str):
            raw = [raw]
        if raw is not None and not isinstance(raw, list):
            raise StepArgsError("argument 'removed' must be a list of paths")
        self.removed: list[str] | None = None
        if raw is not None:
            texts = (str(p).strip() for p in raw)
            self.removed = [t for t in texts if t and t.lower() not in ("none", "null")]
        self.recorded = truthy(self.args.get("recorded_uploads", False), "recorded_uploads")
        command = pull_probe_command(self.results, self.removed, self.recorded)
        self.probe = Probe(probe_name("teardown_pull", command), command)

    def probes(self) -> list[Probe]:
        """$HOME, rsync, and the results dir: where it resolves, its files, names and symlinks."""
        return [self.probe] if self.results else []

    def dest(self, ctx: StepContext) -> Path:
        """The local copy's directory."""
        return copy_dir(self.args.get("dest"), ctx)

    def _refuse(self, ctx: StepContext, what: str, fix: str) -> Plan:
        if self.force:
            return Plan(False, f"{what}; nothing pulled, continuing (--force)")
        return Plan(
            False,
            f"refusing to delete anything on {ctx.host.name}: {what}; {fix}, or pass --force to wipe anyway",
            failed=True,
        )

    def plan(self, ctx: StepContext) -> Plan:
        """Nothing to pull; an unsafe, missing or odd results dir (fail unless force); or pull N files."""
        if not self.results:
            return Plan(False, "no results dir given (--results or vars.results_dir); nothing to pull")
        recs = records(ctx.facts.raw[self.probe.name].stdout)
        found = dict(recs)
        src = f"{ctx.host.name}:{self.results}"
        refused = self._unsafe(src, found)
        if refused is not None:
            return refused
        dest = self.dest(ctx)
        if "notdir" in found:
            return self._refuse(
                ctx,
                f"{src} is {found['notdir']}",
                "give --results (or vars.results_dir) the directory your job writes its results into",
            )
        if "real" not in found:
            return self._not_found(ctx, src, dest)
        checks = TreeChecks.of(recs)
        problem = checks.problem(src, self.results)
        if problem and not self.force:
            return self._refuse(ctx, *problem)
        refused = self._dest_refused(ctx, dest)
        if refused is not None:
            return refused
        # --force goes on, but what will be lost is said (in --check too)
        forced = f"; {problem[0]}: wiping anyway (--force)" if problem else ""
        counts = found.get("files", "").split()
        whole = len(counts) == 2 and counts[0].isdecimal()
        count, size = (int(counts[0]), int(counts[1])) if whole else (0, 0)
        free = free_bytes(dest)
        need = room_problem(size, held_bytes(dest), free)
        if need is not None:  # rsync would fill this machine's disk, then fail: paid hours for nothing
            still = f", {format_bytes(need, binary=False)} of it not yet in {dest}," if need < size else ""
            return self._refuse(
                ctx,
                f"{src} holds {format_bytes(size, binary=False)} ({count} files){still} but the disk of"
                f" {dest} on this machine has only {format_bytes(free, binary=False)} free",
                "make room there (or give --dest a directory on a disk with room), then rerun",
            )
        if "no-rsync" in found and not self.force:
            return Plan(
                False,
                f"host {ctx.host.name} has no rsync, so {src} cannot be pulled; install rsync there"
                " (refusing to delete anything; --force wipes anyway)",
                failed=True,
            )
        return Plan(
            True,
            f"pull {count} files ({format_bytes(size, binary=False)}) from {src} to {dest} and verify"
            f" them (sha256){checks.kept_note()}{checks.specials_note()}{forced}",
            diff={"results": self.results, "dest": str(dest), "files": count, "bytes": size},
        )

    def _unsafe(self, src: str, found: Mapping[str, str]) -> Plan | None:
        """The refusal of a results dir that is unsafe to pull and delete (--force or not), as given
        or where it resolves on the host; None when it is safe."""
        home = found.get("home")
        real = found.get("real", "")
        why = path_problem(self.results, home)
        why = f"it is {why}" if why else None
        if not why and real and real != self.results:
            why = path_problem(real, home)
            why = f"it resolves to {real}, {why}" if why else None
        if not why:
            return None
        return Plan(
            False,
            f"refusing to pull and delete {src}: {why}; give --results (or vars.results_dir) the"
            " directory your job writes its results into",
            failed=True,
        )

    def _not_found(self, ctx: StepContext, src: str, dest: Path) -> Plan:
        """The results dir is not on the host: gone after a verified pull of it (a rerun after the
        removal), else refused (unless --force)."""
        record = read_record(dest)
        if record is not None and record.of(ctx.host, self.results, host_key(ctx)):
            n = len(record.sums)
            return Plan(False, f"{src} is gone; its verified copy ({n} files) is in {dest}")
        other = ""
        if record is not None and (record.address, record.port) == (ctx.host.address, ctx.host.port):
            other = f" ({dest} holds the verified copy of {record.dir}, not of it)"
        return self._refuse(
            ctx,
            f"results dir {src} not found on the host{other}",
            "check the path (--results or vars.results_dir)",
        )

    def _dest_refused(self, ctx: StepContext, dest: Path) -> Plan | None:
        """The refusal of a local dest another user could change, or holding what no pull of this
        host's results dir put there; None when the pull may write into it."""
        exposed = exposed_dest(dest)
        if exposed:  # another user could swap what the pull writes into (or read it)
            return self._refuse(
                ctx, f"{dest} {exposed}", "give --dest a directory only you can write (a new one is made)"
            )
        held = foreign_dest(dest, ctx.host, self.results, host_key(ctx))
        if held:  # the user's files (another run's copy): rsync would replace those of the same names
            return self._refuse(
                ctx,
                f"{dest} already holds {held}, which the pull could overwrite",
                "give --dest an empty or new directory (or move what it holds away), then rerun",
            )
        return None

    def _inventory(self, ctx: StepContext) -> Inventory | None:
        if ctx.inventory is not None or not self.args.get("inventory"):
            return ctx.inventory
        from gpuonboard import inventory as inventory_mod

        return inventory_mod.load(Path(str(self.args["inventory"])))

    def apply(self, ctx: StepContext, plan: Plan) -> Any:
        """rsync into dest (resumable), then compare the host's sha256 manifest with local files."""
        dest = self.dest(ctx)
        # rsync's OpenSSH config first: when it cannot be written, nothing is made, marked or pulled
        default_known = ctx.known_hosts or ctx.project / ".gpuonboard" / "known_hosts"
        known = Path(str(self.args.get("known_hosts") or default_known))
        config = openssh.write_for(ctx.host, self._inventory(ctx), known, ctx.project)
        if isinstance(config, str):
            return PullOutcome(0, "", {}, [], [], config_error=config)
        try:
            dest.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            return PullOutcome(0, "", {}, [], [], local_error=f"{dest}: {exc.strerror or exc}")
        # the record is rewritten once this pull is verified; until then its place says whose
        # pull this dir holds (a rerun resumes it, another host's or dir's pull is refused)
        h = ctx.host
        failed = mark_pulling(dest, Owner(h.name, h.address, h.port, self.results, False, host_key(ctx)))
        if failed:
            return PullOutcome(0, "", {}, [], [], mark_error=failed)
        argv = transfer.pull_argv(config[1], config[0], self.results, dest)
        try:
            # run so that a signal (or our death) stops rsync and its forked receiver too
            run = transfer.run_rsync(argv)
            code, err = run.exit_code, last_line(run.stderr, run.exit_code) if run.exit_code else ""
            no_room = next((w for w in _NO_ROOM if code and w in run.stderr), "")
        except FileNotFoundError:
            code, err, no_room = 127, "rsync is not installed on this machine", ""
        result = ctx.runner.run(manifest_command(self.results, self.removed, self.recorded))
        if not result.ok:
            return PullOutcome(code, err, {}, [], [], last_line(result.stderr, result.exit_code))
        listing, checks, remote = parse_pull_output(result.stdout)
        missing, corrupt = compare_manifests(remote, local_manifest(dest, remote))
        # a file the host listed but gave no sha256 of (gone before it was hashed, or a name the
        # sums did not carry) is not verified: never a pull that passes without it
        missing = sorted({*missing, *unhashed(listing, remote)})
        return PullOutcome(
            code, err, remote, missing, corrupt, listing=listing, checks=checks, no_room=no_room
        )

    def verify(self, ctx: StepContext, plan: Plan, applied: Any) -> str | None:
        """Refuse (fail, so nothing is deleted) unless every remote file is here with its sha256,
        no symlink points out of the results, and the record of it is written."""
        out: PullOutcome = applied
        dest = self.dest(ctx)
        src = f"{ctx.host.name}:{self.results}"
        if out.config_error:
            return f"refusing to delete anything on {ctx.host.name}: nothing pulled: {out.config_error}"
        if out.local_error:
            return (
                f"refusing to delete anything on {ctx.host.name}: cannot create the local copy's directory"
                f" ({out.local_error}); give --dest a directory on this machine you can write to"
            )
        if out.mark_error:
            return (
                f"refusing to delete anything on {ctx.host.name}: nothing pulled: could not write"
                f" {dest / RECORD} ({out.mark_error}); make room on this machine (or give another"
                " --dest), then rerun"
            )
        plan.diff = {**(plan.diff or {}), "verified": len(out.remote) - len(out.missing) - len(out.corrupt)}
        plan.diff.update(missing=out.missing, corrupt=out.corrupt, rsync_exit=out.rsync_code)
        rsync_note = f" (rsync exit {out.rsync_code}: {out.rsync_error})" if out.rsync_code else ""
        fix = "rerun teardown to resume the pull"
        incomplete = f"the pull of {src} to {dest} is incomplete: "
        if out.manifest_error:
            detail = f"could not compute the sha256 manifest on the host ({out.manifest_error})"
        elif found := out.checks.problem(src, self.results):
            (detail, fix), incomplete = found, ""
        elif out.missing or out.corrupt:
            detail = describe_problems(out.missing, out.corrupt, len(out.remote))
            if out.no_room:  # a rerun alone fills the disk again
                rsync_note = f" (rsync: {out.no_room} on this machine)"
                fix = f"make room on the disk of {dest} (or give another --dest), then rerun"
        else:
            h = ctx.host
            record = Record(
                h.name, h.address, h.port, self.results, tuple(out.listing), out.remote, host_key(ctx)
            )
            failed = write_record(dest, record)
            if failed is None:
                plan.msg = (
                    f"pulled {src} to {dest}: {len(out.remote)} files verified (sha256){rsync_note}"
                    f"{out.checks.kept_note()}{out.checks.specials_note()}"
                )
                return None
            detail = f"could not write the verification record {dest / RECORD} ({failed})"
            fix = "make room on this machine (or give another --dest), then rerun"
            incomplete = rsync_note = ""
        # not verified: the copy keeps no link out of itself (the host's word on its links does
        # not count; a rerun pulls them again)
        rsync_note += drop_links_out(dest)
        if not self.force:  # a rerun pulls the corrupt files again (--force wipes: nothing reruns)
            mark_stale(dest, out.corrupt, out.listing)
        if self.force:
            plan.msg = f"pull of {src} to {dest} NOT verified: {detail}{rsync_note}; wiping anyway (--force)"
            return None
        refusal = f"refusing to delete anything on {ctx.host.name}: {incomplete}{detail}{rsync_note}"
        return f"{refusal}; {fix}, or pass --force to wipe anyway"
