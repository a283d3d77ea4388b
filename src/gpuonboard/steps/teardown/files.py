"""`teardown_files`: removes the directories provisioning placed, gpuonboard's uploads and its
own cache dir on the host, each path checked here and re-resolved on the host; the results dir
only while the host's listing still equals the verified pull's record and the local copy still
holds every recorded file."""

from __future__ import annotations

import posixpath
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpuonboard import shell
from gpuonboard.facts.probe import Probe
from gpuonboard.steps.base import Plan, Step, StepArgsError, StepContext, Warm, last_line, truthy
from gpuonboard.steps.teardown import emptied
from gpuonboard.steps.teardown.checks import LISTING_FORMAT, listing_changes, listing_digest
from gpuonboard.steps.teardown.common import (
    copy_dir,
    describe_problems,
    holds,
    path_problem,
    probe_name,
    shown_names,
)
from gpuonboard.steps.teardown.emptied import Emptied
from gpuonboard.steps.teardown.localcopy import copy_unverified
from gpuonboard.steps.teardown.records import RECORD, Record, host_key, read_record
from gpuonboard.steps.teardown.uploads import (
    LEASE_SUFFIX,
    THEIRS,
    Uploads,
    classify_uploads,
    host_clock_note,
    kept_note,
    parse_recorded,
    parse_theirs,
    plaintext_note,
    recorded_probe_command,
    theirs_of,
    uploads_probe_command,
)
from gpuonboard.transfer import uploadlock

CHANGED_EXIT = 3  # the removal script's exit code when the results changed since the pull


def _guarded_rm_script(
    targets: Sequence[tuple[str, str]],
    unchanged: tuple[str, str] | None = None,
    guards: Mapping[str, str] | None = None,
    last: int = 0,
    emptying: Sequence[tuple[str, str]] = (),
) -> str:
    """sh: for each (path, resolved path seen by the probe) re-resolve, compare, then rm -rf the
    resolved path (the data: `rm -rf` of a symlink removes only the link) and the link itself.

    A path whose resolution changed since the probe (a new symlink) is left alone. With
    `unchanged` (results dir, sha256 of its verified listing), nothing at all is removed when
    that dir's files and symlinks (path, size, mtime) differ now: the script prints `changed`
    and the current listing (NUL-terminated) and exits CHANGED_EXIT. `guards` (resolved path:
    sha256 of its listing, uploadlock.CURRENT_LISTING_FN): an upload's tree is left when its
    listing differs now (a job wrote in it since the probe). The `last` targets (gpuonboard's
    record of its uploads, its cache) go only when everything before them went: a rerun must
    still find what is left. `emptying` (path, resolved): configured dirs emptied only of what
    uploads wrote there (emptied.remove_lines), before the targets (the lists are in the cache).
    """
    lines = ["export LC_ALL=C", "rc=0"]
    if guards:
        lines.append(uploadlock.CURRENT_LISTING_FN)
    if unchanged is not None:
        d, digest = shell.quote(unchanged[0]), unchanged[1]
        ls = f"find . \\( -type f -o -type l \\) -printf '{LISTING_FORMAT}\\0'"
        lines.append(
            f"if [ -d {d} ]; then now=$(cd -- {d} && {ls} | sort -z | sha256sum);"
            f" if [ \"${{now%% *}}\" != {digest} ]; then printf 'changed\\0';"
            f" cd -- {d} && {ls}; exit {CHANGED_EXIT}; fi; fi"
        )
    lines += [emptied.remove_lines(path, resolved) for path, resolved in emptying]
    for i, (path, resolved) in enumerate(targets):
        p, r = shell.quote(path), shell.quote(resolved)
        digest = (guards or {}).get(resolved, "")
        guard = (
            f' elif [ "$(current {r} | sha256sum | cut -c1-64)" != {digest} ]; then'
            f" echo {p} changed since teardown looked at it, left >&2; rc=1;"
            if digest
            else ""
        )
        line = (
            f'if [ -e {p} ] || [ -L {p} ]; then if [ "$(realpath -m -- {p})" != {r} ]; then'
            f" echo changed {p} >&2; rc=1;{guard} else"
            # a mount point keeps its (now empty) directory: rm's EBUSY on it is fine
            f' {{ rm -rf -- {r} 2>/dev/null || {{ mountpoint -q {r} && [ -z "$(ls -A {r})" ]; }}; }}'
            f" && {{ ! [ -L {p} ] || rm -f -- {p}; }}"
            f" || {{ echo could not remove {p} >&2; rc=1; }}; fi; fi"
        )
        lines.append(f"[ $rc = 0 ] && {{ {line}; }}" if i >= len(targets) - last else line)
    lines.append("exit $rc")
    return "\n".join(lines)


@dataclass
class Removal:
    """What apply removes (plan.data): (path, resolved) in order, the guards of upload trees
    (resolved: listing digest), how many of the last targets go only when all before went, and
    the verified pull's record once apply read it."""

    present: list[tuple[str, str]]
    guards: dict[str, str]
    last: int = 0
    record: Record | None = None
    emptying: list[tuple[str, str]] = field(default_factory=list)  # (path, resolved): emptied.py


# gpuonboard's own dir on a host (the login's): container smoke records, TensorBoard logs
CACHE_DIR = "${XDG_CACHE_HOME:-$HOME/.cache}/gpuonboard"


# sh, with $p the cache dir: `mine NAME` (this machine's record of uploads, when there is one)
# and `other NAME` per other machine's record there (a home shared between machines)
_RECORDS_SEEN = (
    f'm={uploadlock.RECORD_PREFIX}{uploadlock.MACHINE_SH}; for x in "$p"/{uploadlock.RECORD_PREFIX}*;'
    ' do [ -f "$x" ] || continue; if [ "${x##*/}" = "$m" ]; then echo "mine $m";'
    " else printf 'other %s\\n' \"${x##*/}\"; fi; done; true"
)


@dataclass(frozen=True)
class OwnCache:
    """gpuonboard's cache dir as the files step's probe found it: removed when `target` is set."""

    path: str
    target: str = ""  # what is removed: the path resolved on the host ('' when absent or refused)
    problem: str = ""  # why it is left alone (a relative $XDG_CACHE_HOME, no $HOME, a link to /)
    link: bool = False
    # a home shared between machines (NFS): the other machines' records of uploads found in it,
    # for which the dir stays (their teardown needs them), and this machine's record, removed alone
    others: tuple[str, ...] = ()
    record: str = ""

    def link_note(self) -> str:
        """', a symlink: its target T is removed too', or ''."""
        return f"; a symlink: its target {self.target} is removed too" if self.link else ""


def own_cache(lines: Sequence[str], home: str | None) -> OwnCache | None:
    """The probe's `cache PATH` line and PATH's state line -> OwnCache (None when not probed).

    Unlike a configured path, a cache path that is unsafe to delete never fails the step: it is
    left, and said (its place comes from the host's environment, not from the inventory)."""
    if len(lines) < 2 or not lines[0].startswith("cache "):
        return None
    path, (kind, _, resolved) = lines[0][6:], lines[1].partition(" ")
    if kind not in ("yes", "link"):
        return OwnCache(path)
    why = path_problem(path, home)
    if not why and resolved != posixpath.normpath(path):
        why = path_problem(resolved, home)
        why = f"resolved to {resolved}, {why}" if why else None
    if why:
        return OwnCache(path, problem=why)
    others = tuple(sorted(x[6:] for x in lines[2:] if x.startswith("other ")))
    if others:  # (only this machine's record goes; `mine NAME` when there is one)
        mine = next((x[5:] for x in lines[2:] if x.startswith("mine ")), "")
        return OwnCache(path, others=others, record=posixpath.join(resolved, mine) if mine else "")
    return OwnCache(path, resolved, link=kind == "link")


def shared_cache_note(cache: OwnCache) -> str:
    """Pure: what the message says of a cache dir left for other machines' records."""
    if not cache.others:
        return ""
    # `uploads.HOST@ID`: a record named by a machine id, maybe this box's own of an earlier id
    # (uploadlock.MACHINE_SH adopts it only where none of the current id exists, it and its
    # uploads are on a local disk, and it was last written before this boot)
    ids = (
        "; a record named by another machine id is this box's own from before its machine id changed"
        " only where it has none of its current id, that record and its uploads are on a local disk"
        " (ext2/3/4, xfs, btrfs, zfs, tmpfs) and it was last written before this boot (then it is"
        " renamed to this box's id); nodes cloned from one image that share this home need"
        " host names of their own (or a machine id each: systemd-machine-id-setup)"
        if any("@" in name for name in cache.others)
        else ""
    )
    return (
        f" (gpuonboard's cache {cache.path} is left: it holds the upload records of other machines"
        f" sharing this home ({shown_names(list(cache.others), 3)}); the teardown of each removes its"
        f" own{ids})"
    )


@dataclass
class _Found:
    """What the files step found of gpuonboard's uploads (see TeardownFilesStep._uploads)."""

    ours: list[tuple[str, str]] = field(default_factory=list)  # (path, resolved): removed
    guards: dict[str, str] = field(default_factory=dict)  # resolved tree: its listing's sha256
    kept: list[tuple[str, str]] = field(default_factory=list)  # (path, why): trees left, named
    note: str = ""
    bad: str | None = None  # why the data dir itself is refused
    busy: str | None = None  # the refusal while an upload runs there
    # path: the other machines sharing this home whose record of uploads holds it (parse_theirs)
    theirs: dict[str, tuple[str, ...]] = field(default_factory=dict)


class TeardownFilesStep(Step):
    """Remove directories provisioning placed (dataset, decrypted data, markers, pulled results)."""

    name = "teardown_files"
    read_only = False
    ARGS = {
        "paths": "remote directories/files to remove ('' entries are ignored: unset vars)",
        "results": "the remote results dir (removed too: its copy was pulled and verified first)",
        "dest": "the local copy of the results (its record says what was verified; as teardown_pull)",
        "force": "remove the results dir without comparing it with the verified copy's record",
        "own_cache": "also remove gpuonboard's own cache dir on the host,"
        " ${XDG_CACHE_HOME:-~/.cache}/gpuonboard (container smoke records, TensorBoard logs)",
        "uploads_in": "the data dir: remove what gpuonboard's dataset upload made in it (the dataset's"
        " copy and stores, marked copies, leases), and name the rest, which stays",
        "dataset": "the dataset (a local path) whose copy <uploads_in>/<its base name> is removed",
        "recorded_uploads": "also remove the uploads `sync` recorded on the host, wherever they are"
        " (under another --dest, --decrypt-to plaintext): each copy, its stores and leases",
        "emptied": "remote directories emptied only of what gpuonboard's uploads wrote there and"
        " is unchanged since (vars.dataset_dir, vars.decrypted_dir); the rest stays, named, and the"
        " dir with it",
    }

    def __init__(self, args: Mapping[str, Any], label: str | None = None) -> None:
        super().__init__(args, label)
        self.own_cache = truthy(self.args.get("own_cache", False), "own_cache")
        raw = self.args.get("paths") or []
        if isinstance(raw, str):
            raw = [raw]
        if not isinstance(raw, list):
            raise StepArgsError("argument 'paths' must be a list of paths")
        emptied_raw = self.args.get("emptied") or []
        if isinstance(emptied_raw, str):
            emptied_raw = [emptied_raw]
        if not isinstance(emptied_raw, list):
            raise StepArgsError("argument 'emptied' must be a list of paths")
        self.emptied = [p for p in dict.fromkeys(str(x).strip() for x in emptied_raw) if p]
        self.emptied = [p for p in self.emptied if p.lower() not in ("none", "null")]
        raw = [*raw, *self.emptied]
        results = str(self.args.get("results") or "").strip()
        self.results = posixpath.normpath(results) if results.lower() not in ("", "none", "null") else ""
        self.force = truthy(self.args.get("force", False), "force")
        wanted = [str(p).strip() for p in [*raw, results]]
        self.paths = list(dict.fromkeys(p for p in wanted if p and p.lower() not in ("none", "null")))
        quoted = " ".join(shell.quote(p) for p in self.paths) or "''"
        state = (
            'if [ -L "$p" ]; then echo "link $(realpath -m -- "$p")";'
            ' elif [ -e "$p" ]; then echo "yes $(realpath -m -- "$p")"; else echo no; fi'
        )
        # (a configured path: its trailing slashes stripped first, as `[ -L link/ ]` is false; a
        # parent that resolves elsewhere than itself, a link now, puts the path `under` it)
        under = (
            'while [ "${p%/}" != "$p" ] && [ "$p" != / ]; do p="${p%/}"; done; d=$(dirname -- "$p");'
            ' if [ ! -L "$p" ] && [ -e "$p" ] && [ "$(realpath -m -- "$d")" != "$(realpath -ms -- "$d")" ];'
            f' then echo "under $(realpath -m -- "$p")"; else {state}; fi'
        )
        command = f'echo "home $HOME"; for p in {quoted}; do [ -n "$p" ] || continue; {under}; done'
        if self.own_cache:  # where tunnel.private_log and the container step's SMOKE_DIR put it
            command += f'; p="{CACHE_DIR}"; printf \'cache %s\\n\' "$p"; {state}; {_RECORDS_SEEN}'
        self.probe = Probe(probe_name("teardown_files", command), command)
        uploads_in = str(self.args.get("uploads_in") or "").strip()
        self.uploads_in = uploads_in if uploads_in.lower() not in ("none", "null") else ""
        dataset = str(self.args.get("dataset") or "").strip().rstrip("/")
        self.dataset_name = posixpath.basename(dataset) if dataset.lower() not in ("none", "null") else ""
        self.recorded = truthy(self.args.get("recorded_uploads", False), "recorded_uploads")
        listing = emptied.probe_command(self.emptied)
        self.emptied_probe = Probe(probe_name("teardown_emptied", listing), listing)
        self._listings(check=False)

    def _listings(self, check: bool) -> None:
        """The probes listing the uploads (`check`: the ones writing nothing on the host)."""
        listing = uploads_probe_command(self.uploads_in, check)
        self.uploads_probe = Probe(probe_name("teardown_uploads", listing), listing)
        listing = recorded_probe_command(check)
        self.recorded_probe = Probe(probe_name("teardown_recorded", listing), listing)

    def warm(self, warm: Warm) -> None:
        """Check mode lists the uploads without writing on the host (a lease's age by the host's
        clock: reading its file system's makes a file beside it)."""
        self._listings(warm.check)

    def probes(self) -> list[Probe]:
        """$HOME and, per path, whether it exists (`yes`), is a symlink (`link`), and where it
        resolves; with `uploads_in`, the entries of the data dir; with `recorded_uploads`, the
        uploads `sync` recorded and the entries of each dir holding one."""
        found = [self.probe] if self.paths or self.own_cache or self.uploads_in or self.recorded else []
        found += [self.uploads_probe] if self.uploads_in else []
        found += [self.emptied_probe] if self.emptied else []
        return found + ([self.recorded_probe] if self.recorded else [])

    def _uploads(self, ctx: StepContext, home: str | None, gone: Collection[str] = ()) -> _Found:
        """What to remove of gpuonboard's uploads, the note on what stays, why the data dir itself
        is refused, the refusal while an upload runs there: those in the data dir, and with
        `recorded_uploads` those `sync` recorded. A dir of uploads inside a configured path that
        is removed whole (`gone`, resolved: the results dir pulled and verified first) goes with
        it: nothing in it is said to stay."""
        recorded = None
        shared_with: dict[str, tuple[str, ...]] = {}
        if self.recorded:
            raw = ctx.facts.raw.get(self.recorded_probe.name)
            recorded = parse_recorded(raw.stdout if raw is not None else "")
            shared_with = parse_theirs(raw.stdout if raw is not None else "")
        names, listings = recorded or ({}, {})
        out = _Found(theirs=shared_with)
        data_root = None
        if self.uploads_in:
            if not posixpath.isabs(self.uploads_in):
                return _Found(bad=f"{self.uploads_in} (not an absolute path)")
            raw = ctx.facts.raw.get(self.uploads_probe.name)
            norm = posixpath.normpath(self.uploads_in)
            found = classify_uploads(
                raw.stdout if raw is not None else "", self.dataset_name, self._skipped(norm), names
            )
            if found is not None:
                busy = self._running(ctx, norm, found)
                if busy:
                    return _Found(busy=busy)
                data_root = found.root
            if found is not None and not any(holds(g, found.root) for g in gone):
                here = norm.rstrip("/")
                out.note = _unknown_note(here, self._removable(found, here, home, out))
                if recorded is None:  # (a host where no sync recorded its uploads: an older one's)
                    out.note += plaintext_note(here, found.ciphertexts)
                out.note += host_clock_note(here, found.by_host_clock)
        left: list[str] = []
        holding: list[str] = []
        for where, listing in sorted(listings.items()):  # the dirs holding recorded uploads
            found = classify_uploads(listing, "", self._skipped(where), names, only_recorded=True)
            if found is None or found.root == data_root:
                continue
            busy = self._running(ctx, where, found)
            if busy:
                return _Found(busy=busy)
            if any(holds(g, found.root) for g in gone):
                continue
            here = where.rstrip("/")
            out.note += host_clock_note(here, found.by_host_clock)
            theirs = _Found(theirs=out.theirs)
            others = self._removable(found, here, home, theirs)
            # (the rest of a dir such as /dev/shm is not the upload's: said only when recorded)
            left += [f"{here}/{o}" for o in others if o in names.get(where, ())]
            for path, why in theirs.kept:  # (one holding the data dir: said as such below)
                resolved = f"{found.root.rstrip('/')}/{posixpath.basename(path)}"
                if data_root is not None and holds(resolved, data_root):
                    holding.append(path)
                else:
                    out.kept.append((path, why))
            for path, resolved in theirs.ours:
                if data_root is not None and holds(resolved, data_root):
                    holding.append(path)  # (a copy made the data dir: it is never removed whole)
                elif (path, resolved) not in out.ours:
                    out.ours.append((path, resolved))
                    if resolved in theirs.guards:
                        out.guards[resolved] = theirs.guards[resolved]
        if left:
            out.note += (
                f"; left on the host: {shown_names(left)}, recorded by sync as its uploads but not removable"
                " now (a symlink, another user's, or an unsafe path): delete them yourself"
            )
        if holding:
            out.note += (
                f"; left on the host: {shown_names(holding)}, recorded by sync as its uploads but holding the"
                f" data dir {data_root}, which teardown never removes whole (it may hold other runs'"
                " outputs that no pull took): delete what you no longer need there yourself"
            )
        out.note += kept_note(out.kept)
        return out

    def _skipped(self, where: str) -> set[str]:
        """Names in `where` that a configured path removes (never twice)."""
        paths = map(posixpath.normpath, self.paths)
        return {posixpath.basename(p) for p in paths if posixpath.dirname(p) == where}

    @staticmethod
    def _running(ctx: StepContext, where: str, found: Uploads) -> str | None:
        """The refusal while an upload runs in `where` (a lease refreshed within a minute), or None:
        removing its copy under it fails the upload, and a rerun puts it back."""
        if not found.live_leases:
            return None
        lease = found.live_leases[0]
        beside = lease.startswith(".") and lease.endswith(LEASE_SUFFIX)  # (else: a copy holding it)
        name = lease[1 : -len(LEASE_SUFFIX)] if beside else lease
        return (
            f"refusing to delete anything on {ctx.host.name}: an upload to {where.rstrip('/')}/{name} is"
            " running (its lease was refreshed within the last minute); wait for it to end, or stop"
            f" it, then rerun{host_clock_note(where, found.by_host_clock)}"
        )

    @staticmethod
    def _removable(found: Uploads, here: str, home: str | None, out: _Found) -> list[str]:
        """Add found.ours that pass the path check to out.ours (path, resolved), their guards to
        out.guards and found.kept to out.kept (path, why); the other names that stay."""
        kept = dict(found.kept)
        others = [o for o in found.others if o not in kept]
        out.kept += [(f"{here}/{name}", why) for name, why in found.kept]
        for name in found.ours:  # (each is removed: the same check as a configured path)
            path, resolved = f"{here}/{name}", f"{found.root.rstrip('/')}/{name}"
            machines = theirs_of(out.theirs, path, resolved)
            if machines:  # (another machine recorded it too: a dir they share; it stays, said)
                out.kept.append((path, THEIRS + ", ".join(machines)))
            elif path_problem(path, home) or path_problem(resolved, home):
                others.append(name)  # (a name with a line break: left, said, never fatal)
            elif (path, resolved) not in out.ours:
                out.ours.append((path, resolved))
                if name in found.guards:
                    out.guards[resolved] = found.guards[name]
        return others

    def _configured(
        self, states: Sequence[str], home: str | None
    ) -> tuple[list[tuple[str, str]], set[str], list[str]]:
        """The configured paths that exist on the host (each with the path it resolves to, which
        is what is deleted), those that are symlinks, and each unsafe one refused with why."""
        present: list[tuple[str, str]] = []
        links: set[str] = set()
        refused: list[str] = []
        for path, state in zip(self.paths, states, strict=True):
            why = path_problem(path, home)
            kind, _, resolved = state.partition(" ")
            resolved = resolved if kind in ("yes", "link", "under") else ""
            if kind == "link":
                links.add(path)
            # (the resolved path is what is deleted: it passes the same check)
            if not why and resolved and resolved != posixpath.normpath(path):
                why = path_problem(resolved, home)
                why = f"it resolves to {resolved}, {why}" if why else None
            if why:
                refused.append(f"{path} ({why})")
            elif kind in ("link", "under") and posixpath.normpath(path) != self.results:
                refused.append(_link_refusal(path, resolved, kind == "under"))
            elif resolved:
                present.append((path, resolved))
        return present, links, refused

    def plan(self, ctx: StepContext) -> Plan:
        """Refuse unsafe paths (before deleting anything); list the ones that exist."""
        if not self.paths and not self.own_cache and not self.uploads_in and not self.recorded:
            return Plan(False, "no provisioned directories configured; nothing to remove")
        # (\n alone: a path may hold \r, \v, U+2028, which str.splitlines() also cuts at)
        lines = ctx.facts.raw[self.probe.name].stdout.split("\n")
        home = lines[0][5:] if lines and lines[0].startswith("home ") else None
        states = lines[1 : 1 + len(self.paths)]
        if len(states) != len(self.paths):
            return Plan(False, f"could not inspect {', '.join(self.paths)} on the host", failed=True)
        cache = own_cache(lines[1 + len(self.paths) :], home) if self.own_cache else None
        present, links, refused = self._configured(states, home)
        found = self._uploads(ctx, home, [r for _, r in present])
        emptying = [(p, r) for p, r in present if p in self.emptied and posixpath.normpath(p) != self.results]
        present = [x for x in present if x not in emptying]
        uploads, left = found.ours, found.note
        if found.busy:
            return Plan(False, found.busy, failed=True)
        if found.bad:
            refused.append(found.bad)
        if refused:
            return Plan(
                False,
                "refusing to delete unsafe paths: " + "; ".join(refused) + "; fix the host vars",
                failed=True,
            )
        said = [f"{p} (a symlink: its target {r} is removed too)" if p in links else p for p, r in present]
        gone = {r for _, r in present}
        emptying, emptied_said, emptied_note, holding, kept_any = self._emptying(ctx, emptying)
        said = emptied_said + said
        left += emptied_note
        uploads = [(p, r) for p, r in uploads if r not in gone]  # (a configured path removes it)
        if uploads:
            present.extend(uploads)
            norm = posixpath.normpath(self.uploads_in) if self.uploads_in else ""
            where = f" in {self.uploads_in}" if all(posixpath.dirname(p) == norm for p, _ in uploads) else ""
            said.append(f"{shown_names([p for p, _ in uploads], 5)} (gpuonboard's uploads{where})")
        # (an upload another machine recorded too stays for that machine's record: not this one's)
        kept = any(why and not why.startswith(THEIRS) for _, why in found.kept) or holding
        cache_note, last = _cache_removal(cache, kept, present, said, links) if cache is not None else ("", 0)
        note = left + cache_note
        if not present and not emptying and kept_any:
            return Plan(False, f"nothing to remove{note}")
        if not present and not emptying:
            looked = self.paths + ([f"uploads in {self.uploads_in}"] if self.uploads_in else [])
            looked += ["the uploads sync recorded"] if self.recorded else []
            return Plan(
                False, f"already clean: {shown_names(looked, 5) or 'gpuonboard cache'} not present{note}"
            )
        names = [p for p, _ in present]
        diff = {"removed": names, "targets": {p: r for p, r in present if p in links}}
        diff["emptied"] = [p for p, _ in emptying]
        data = Removal(present, found.guards, last, emptying=emptying)
        return Plan(True, f"remove {', '.join(said)}{note}", diff=diff, data=data)

    def _emptying(
        self, ctx: StepContext, found: list[tuple[str, str]]
    ) -> tuple[list[tuple[str, str]], list[str], str, bool, bool]:
        """Of the configured dirs emptied only of what uploads wrote there (present, as (path,
        resolved)): those the removal empties, what the message says it removes, its note on what
        stays, whether anything stays in a dir some upload's list covers (then gpuonboard's cache,
        holding the lists, stays too: a rerun still tells a changed file from a new one), and
        whether anything stays at all."""
        raw = ctx.facts.raw.get(self.emptied_probe.name)
        probed = emptied.parse_probe(raw.stdout if raw is not None else "")
        emptying: list[tuple[str, str]] = []
        said: list[str] = []
        note, holding, kept_any = "", False, False
        for path, resolved in found:
            seen: Emptied | None = probed.get(path)
            if seen is None or seen.resolved != resolved:
                note += f"; kept: {path}, whose content could not be read: nothing in it was removed"
                kept_any = True
                continue
            note += seen.note()
            if seen.theirs:  # (another machine's upload there too: left whole, for it)
                kept_any = True
                continue
            holding = holding or (seen.kept > 0 and seen.lists > 0)
            kept_any = kept_any or seen.kept > 0
            if seen.kept and not seen.remove:
                continue
            emptying.append((path, resolved))
            files = f"{seen.remove} file{'' if seen.remove == 1 else 's'}"
            said.append(path if not seen.kept else f"the {files} uploads wrote in {path}")
        return emptying, said, note, holding, kept_any

    def apply(self, ctx: StepContext, plan: Plan) -> Any:
        """One remote command removing every path after re-checking its resolution and, first,
        that the results dir still holds exactly what the verified pull recorded."""
        removal: Removal = plan.data
        present = removal.present
        unchanged = None
        results = next((p for p, _ in present if self.results and posixpath.normpath(p) == self.results), "")
        if results and not self.force:
            dest = copy_dir(self.args.get("dest"), ctx)
            record = read_record(dest)
            if record is None or not record.of(ctx.host, self.results, host_key(ctx)):
                return (
                    f"refusing to delete anything on {ctx.host.name}: {dest} holds no verified copy of"
                    f" {ctx.host.name}:{self.results} (no matching {RECORD}); run the whole teardown (its"
                    " pull verifies the copy), or pass --force to wipe anyway"
                )
            # by content, right before deleting: the copy may have lost or changed files since its
            # pull was verified (moved, deleted, corrupted: a rerun of `--only files`, `--resume`)
            missing, corrupt = copy_unverified(dest, record)
            if missing or corrupt:
                problems = describe_problems(missing, corrupt, len(record.sums))
                return (
                    f"refusing to delete anything on {ctx.host.name}: the verified copy {dest} of"
                    f" {ctx.host.name}:{self.results} no longer matches its pull (sha256): {problems};"
                    " run the whole teardown (its pull brings them back), or pass --force to wipe anyway"
                )
            unchanged = (results, listing_digest(record.listing))
            removal.record = record
        # on sh's stdin, not in the command: one line per path (a host with hundreds of recorded
        # uploads) made a command over sshd's and execve's limits, and the connection was reset
        script = _guarded_rm_script(present, unchanged, removal.guards, removal.last, removal.emptying)
        return ctx.runner.run("sh -s", stdin=script.encode("utf-8", "surrogateescape"))

    def verify(self, ctx: StepContext, plan: Plan, applied: Any) -> str | None:
        """The removal must succeed; results changed since the pull removed nothing."""
        if isinstance(applied, str):
            return applied
        if applied.ok:
            return None
        if applied.exit_code == CHANGED_EXIT and applied.stdout.startswith("changed\0"):
            record = plan.data.record
            now = [e for e in applied.stdout[len("changed\0") :].split("\0") if e]
            changed = listing_changes(record.listing, now) or ["?"]
            host = ctx.host.name
            return (
                f"refusing to delete anything on {host}: {host}:{self.results} changed after it was pulled"
                f" (e.g. {shown_names(changed, 1)}): a job may still be writing; stop it, then rerun"
            )
        why = last_line(applied.stderr, applied.exit_code)
        kept = " (gpuonboard's record of its uploads on the host is kept: a rerun finds what is left)"
        return f"could not remove everything: {why}{kept if plan.data.last else ''}"


def _cache_removal(
    cache: OwnCache, kept: bool, present: list[tuple[str, str]], said: list[str], links: set[str]
) -> tuple[str, int]:
    """gpuonboard's own cache on the host added to what is removed (`present`, `said`, `links`),
    or its record of this machine's uploads where other machines share it: the note on what of it
    is left, and how many of the last removals are the cache's (removed last). `kept`: an upload
    is left, which the cache records, so the cache is left too."""
    if kept and (cache.target or cache.record):
        # (its record of uploads and lists of what they wrote: a rerun finds the trees left)
        return f" (gpuonboard's cache {cache.path} is left too: it records the uploads left above)", 0
    if cache.target:
        present.append((cache.path, cache.target))
        said.append(f"{cache.path} (gpuonboard's own cache on the host{cache.link_note()})")
        if cache.link_note():
            links.add(cache.path)
        return "", 1
    if cache.problem:
        return f" (gpuonboard's cache {cache.path} is left: it is {cache.problem})", 0
    if not cache.others:
        return "", 0
    if not cache.record:
        return shared_cache_note(cache), 0
    # (last, as the dir would go: the uploads it names went first, and its lists of what they wrote)
    head, name = posixpath.split(cache.record)
    lists = posixpath.join(head, "written." + name[len(uploadlock.RECORD_PREFIX) :])
    present += [(lists, lists), (cache.record, cache.record)]
    said.append(f"{cache.record} (this machine's record of gpuonboard's uploads)")
    return shared_cache_note(cache), 2


def _link_refusal(path: str, resolved: str, under: bool = False) -> str:
    """Why a configured path that is a symlink now (`under`: one of its parent dirs is) is refused:
    its target is not what provisioning made there (before, `rm -rf` of the target took a
    colleague's checkpoint in a shared dir the path had become a link to). The results dir is not
    refused so: it is compared with the verified pull's record, by content, right before its
    removal."""
    if under:
        return (
            f"{path} (under a symlink now: it resolves to {resolved}: teardown never deletes through a"
            f" link what it did not make; set the var to {resolved} if that is the dir provisioning made)"
        )
    return (
        f"{path} (a symlink now, to {resolved}: teardown never deletes through a link what it did not"
        f" make; remove the link yourself (rm {shell.quote(path.rstrip('/') or path)}), or set the var to"
        f" {resolved} if that is the dir provisioning made)"
    )


def _unknown_note(here: str, others: Collection[str]) -> str:
    """The note on the entries of data dir `here` teardown cannot tell for uploads ("" for none)."""
    if not others:
        return ""
    n = len(others)
    shown = shown_names([repr(f"{here}/{o}") if "\n" in o else f"{here}/{o}" for o in sorted(others)])
    return (
        f"; left on the host: {n} {'entry' if n == 1 else 'entries'} in {here} that teardown"
        " cannot tell for gpuonboard's uploads (it knows vars.dataset's copy, marked ones and"
        f" those `sync` recorded on the host) nor pulled ({shown}): pull or delete them"
        " yourself, or set vars.dataset_dir to a dir teardown should remove whole"
    )
