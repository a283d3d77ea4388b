"""Teardown steps: pull results back (rsync, sha256-verified), then remove what provisioning placed.

`teardown_pull` runs `rsync` on this machine over the host's own SSH settings (key, port,
our known_hosts with StrictHostKeyChecking=yes, ProxyJump through the jump chain), then
compares a sha256 manifest computed on the host (one `find ... -exec sha256sum` through
the run's connection) with the local files. When files are missing or corrupt the step
fails, so the runner skips every later step that changes the host: nothing is deleted
while a copy is incomplete (unless `force`). `teardown_containers` and `teardown_files`
remove containers, the image and directories; every path is checked (never `/`, a home
dir, a system dir) both here and again on the host after resolving symlinks.
`teardown_cost` prints what the rental cost, rounded up by the vendor's billing unit.

Pure helpers (cost, path safety, manifests, ssh/rsync command lines) are tested in
tests/unit/test_teardown.py.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import posixpath
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import openssh, shell
from ..facts.probe import Probe
from ..units import format_bytes
from .base import Plan, Step, StepArgsError, StepContext

if TYPE_CHECKING:
    from ..inventory import Inventory

PARTIAL_DIR = ".rsync-partial"
RECORD = ".gpuonboard-verified.sha256"  # in the local copy after a verified pull
UNIT_SECONDS = {"second": 1, "minute": 60, "hour": 3600}
SHOWN = 3  # how many paths a message names before "+N more"

# never deleted, at any depth below them
_SYSTEM_TREES = (
    *("/proc", "/sys", "/dev", "/boot", "/etc", "/bin", "/sbin", "/usr"),
    *("/lib", "/lib32", "/lib64", "/libx32", "/snap"),
)
# their direct children are home dirs or system state (/home/alice, /var/lib): refused too
_GUARDED_PARENTS = ("/home", "/var", "/root", "/Users")


def _probe_name(kind: str, key: str) -> str:
    return f"{kind}:{hashlib.sha1(key.encode()).hexdigest()[:10]}"


def _truthy(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def _last_line(text: str, code: int) -> str:
    return (text.strip().splitlines() or [f"exit code {code}"])[-1]


# ---------------------------------------------------------------- pure: cost


@dataclass(frozen=True)
class Cost:
    """What a rental cost: elapsed time, billed time (rounded up by unit), amount."""

    start: float
    end: float
    source: str
    unit: str
    rate: float | None
    currency: str

    @property
    def elapsed(self) -> float:
        """Seconds rented (never negative)."""
        return max(0.0, self.end - self.start)

    @property
    def billed_units(self) -> int:
        """Started billing units: a started hour (minute, second) is a paid one."""
        return math.ceil(self.elapsed / UNIT_SECONDS[self.unit] - 1e-9)

    @property
    def billed_seconds(self) -> int:
        """Billed time in seconds."""
        return self.billed_units * UNIT_SECONDS[self.unit]

    @property
    def amount(self) -> float | None:
        """billed hours x hourly rate, or None without a rate."""
        if self.rate is None:
            return None
        return round(self.billed_seconds / 3600 * self.rate, 2)

    def text(self) -> str:
        """One sentence for the step message."""
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.start))
        head = (
            f"rented {_duration(self.elapsed)} since {since} ({self.source}); billed per {self.unit}:"
            f" {self.billed_units} {self.unit}{'' if self.billed_units == 1 else 's'}"
        )
        if self.amount is None:
            return head + "; no billing rate in the vendor profile, so no amount"
        return f"{head} x {self.rate:g} {self.currency}/hour = {self.amount:.2f} {self.currency}".rstrip()

    def to_json(self) -> dict[str, Any]:
        """For the step's diff (summary.json)."""
        return {
            "since": self.start,
            "until": self.end,
            "source": self.source,
            "elapsed_s": round(self.elapsed, 1),
            "unit": self.unit,
            "billed_units": self.billed_units,
            "billed_s": self.billed_seconds,
            "rate_per_hour": self.rate,
            "currency": self.currency,
            "amount": self.amount,
        }


def _duration(seconds: float) -> str:
    s = int(seconds)
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return (f"{d}d" if d else "") + f"{h}h{m:02d}m{s:02d}s"


def rental_cost(
    start: float, end: float, unit: str, rate: float | None, currency: str = "", source: str = ""
) -> Cost:
    """The rental's cost from start to end, rounded UP by the billing unit, times the hourly rate."""
    if unit not in UNIT_SECONDS:
        raise ValueError(f"billing unit must be one of {', '.join(UNIT_SECONDS)}, not {unit!r}")
    return Cost(start, end, source, unit, rate, currency)


def parse_since(value: Any) -> float | None:
    """`vars.rented_since`: epoch seconds or ISO 8601 (`2026-11-29T17:35:00+08:00`); None when unset."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, datetime):
        return value.timestamp()
    text = str(value).strip()
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise ValueError(f"{value!r} is not epoch seconds or an ISO 8601 time") from None


def run_id_time(run_id: str) -> float | None:
    """The local time a run id (`20261129-173501-3fa2`) starts with, or None."""
    try:
        return time.mktime(time.strptime(run_id[:15], "%Y%m%d-%H%M%S"))
    except (ValueError, OverflowError):
        return None


def journal_start(state_dir: Path, host: str) -> tuple[float, str] | None:
    """The earliest run recorded for `host` in its provision journal (else any of its journals
    but teardown's): (epoch, where it came from)."""
    found: list[tuple[int, float, str]] = []
    try:
        files = sorted(state_dir.glob("*.json"))
    except OSError:
        return None
    for path in files:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or data.get("host") != host or data.get("playbook") == "teardown":
            continue
        ids = [str(data.get("first_run_id") or ""), str(data.get("run_id") or "")]
        ids += [str(r.get("run_id") or "") for r in (data.get("steps") or {}).values() if isinstance(r, dict)]
        times = [t for t in (run_id_time(i) for i in ids if i) if t is not None]
        if times:
            rank = 0 if data.get("playbook") == "provision" else 1
            found.append((rank, min(times), f"the {data.get('playbook')} journal"))
    if not found:
        return None
    best_rank = min(f[0] for f in found)
    t, src = min((f[1], f[2]) for f in found if f[0] == best_rank)
    return t, src


# ---------------------------------------------------------------- pure: path safety


def path_problem(path: str, home: str | None = None) -> str | None:
    """Why deleting `path` on a host is refused, or None when it is safe to delete."""
    if not path or not path.strip():
        return "an empty path"
    if any(c in path for c in "\n\r\0"):
        return "a path with a line break"
    if not posixpath.isabs(path):
        return "not an absolute path"
    if ".." in path.split("/"):
        return "a path with '..'"
    norm = posixpath.normpath(path)
    if norm.startswith("//"):
        norm = "/" + norm.lstrip("/")
    if norm == "/":
        return "the root directory"
    parts = norm.strip("/").split("/")
    if len(parts) == 1:
        return "a top-level directory"
    for tree in _SYSTEM_TREES:
        if norm == tree or norm.startswith(tree + "/"):
            return "a system directory"
    if len(parts) == 2 and "/" + parts[0] in _GUARDED_PARENTS:
        return "a home directory" if parts[0] in ("home", "Users") else "a system directory"
    if home and home.startswith("/"):
        h = posixpath.normpath(home)
        if norm == h:
            return "the login user's home directory"
        if h.startswith(norm + "/"):
            return "a directory holding the login user's home directory"
    return None


# ---------------------------------------------------------------- pure: manifests


def _unescape(name: str) -> str:
    out, i = [], 0
    while i < len(name):
        c = name[i]
        if c == "\\" and i + 1 < len(name):
            nxt = name[i + 1]
            out.append({"n": "\n", "r": "\r", "\\": "\\"}.get(nxt, nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def parse_manifest(text: str) -> dict[str, str]:
    """`sha256sum` output (run in the results dir on `./path`s) -> {relative path: sha256}.

    sha256sum escapes a name holding a backslash or newline and marks the line with a
    leading backslash; files in a partial-transfer dir are not results.
    """
    out: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        escaped = line.startswith("\\")
        if escaped:
            line = line[1:]
        digest, sep, name = line.partition("  ")
        if not sep or len(digest) != 64:
            name_parts = line.split(" ", 1)
            if len(name_parts) != 2 or len(name_parts[0]) != 64:
                continue
            digest, name = name_parts[0], name_parts[1].lstrip("*")
        if escaped:
            name = _unescape(name)
        name = name[2:] if name.startswith("./") else name
        if name.split("/")[0] == PARTIAL_DIR or f"/{PARTIAL_DIR}/" in f"/{name}":
            continue
        out[name] = digest.lower()
    return out


def sha256_file(path: Path) -> str:
    """sha256 of a local file, streamed."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def local_manifest(dest: Path, names: Iterable[str]) -> dict[str, str | None]:
    """sha256 of each named file under dest (None when it is missing or not a file)."""
    out: dict[str, str | None] = {}
    for name in names:
        p = dest / name
        try:
            out[name] = sha256_file(p) if p.is_file() and not p.is_symlink() else None
        except OSError:
            out[name] = None
    return out


def compare_manifests(
    remote: Mapping[str, str], local: Mapping[str, str | None]
) -> tuple[list[str], list[str]]:
    """(missing, corrupt): remote files absent locally, and those whose sha256 differs."""
    missing = sorted(n for n in remote if local.get(n) is None)
    corrupt = sorted(n for n, d in remote.items() if local.get(n) is not None and local[n] != d)
    return missing, corrupt


def _names(paths: Sequence[str], limit: int = SHOWN) -> str:
    shown = ", ".join(paths[:limit])
    return shown + (f" (+{len(paths) - limit} more)" if len(paths) > limit else "")


def describe_problems(missing: Sequence[str], corrupt: Sequence[str], total: int) -> str:
    """`2 of 5 files not verified: missing 1 (a.txt); corrupt 1 (b.bin)` (first paths + count)."""
    parts = []
    if missing:
        parts.append(f"missing {len(missing)} ({_names(missing)})")
    if corrupt:
        parts.append(f"corrupt {len(corrupt)} ({_names(corrupt)})")
    return f"{len(missing) + len(corrupt)} of {total} files not verified: " + "; ".join(parts)


# ---------------------------------------------------------------- pure: ssh / rsync command lines


def rsync_argv(alias: str, config: Path, remote_dir: str, dest: Path) -> list[str]:
    """rsync resumable pull of remote_dir's contents into dest (argv, run without a shell),
    through `ssh -F config` (see gpuonboard.openssh: same key, port, jumps, strict host keys)."""
    return [
        "rsync",
        "-a",
        "--protect-args",  # the remote path travels inside the protocol, never through a shell
        "--partial",
        f"--partial-dir={PARTIAL_DIR}",
        "-e",
        shell.join(["ssh", "-F", str(config)]),
        # the source reaches the host as `./` in the dir its shell entered (quoted): with
        # --protect-args the host's rsync expands wildcards, so `[x]` or `*` in it named others
        "--rsync-path=" + shell.join(["cd", "--", remote_dir.rstrip("/") or "/"]) + " && rsync",
        f"{alias}:./",
        f"{dest}/",
    ]


def manifest_command(remote_dir: str) -> str:
    """One remote command: sha256 of every file under remote_dir, as `./relative/path`."""
    return shell.sh_c(
        f"cd {shell.quote(remote_dir)} && find . -type f ! -path './{PARTIAL_DIR}/*'"
        " -exec sha256sum -- {} +"
    )


# ---------------------------------------------------------------- steps


def _check_dir_arg(value: Any, name: str) -> str:
    text = str(value or "").strip()
    if text and not posixpath.isabs(text):
        raise StepArgsError(f"argument {name!r} must be an absolute path on the host, not {text!r}")
    return posixpath.normpath(text) if text else ""


@dataclass
class PullOutcome:
    """What rsync and the manifest comparison found."""

    rsync_code: int
    rsync_error: str
    remote: dict[str, str]
    missing: list[str]
    corrupt: list[str]
    manifest_error: str = ""


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
    }

    def __init__(self, args: Mapping[str, Any], label: str | None = None) -> None:
        super().__init__(args, label)
        self.results = _check_dir_arg(self.args.get("results"), "results")
        self.force = _truthy(self.args.get("force", False))
        command = (
            f"d={shell.quote(self.results or '/')}; "
            'if [ -d "$d" ]; then find "$d" -type f -printf "%s\\n" |'
            " awk '{n++; b+=$1} END {printf \"files %d %.0f\\n\", n, b}'; else echo missing; fi; "
            "command -v rsync >/dev/null 2>&1 && echo rsync || echo no-rsync"
        )
        self.probe = Probe(_probe_name("teardown_pull", command), command)

    def probes(self) -> list[Probe]:
        """How many files the results dir holds, and whether the host has rsync."""
        return [self.probe] if self.results else []

    def dest(self, ctx: StepContext) -> Path:
        """The local copy's directory."""
        raw = str(self.args.get("dest") or "") or str(Path("results") / "{host}")
        path = Path(os.path.expanduser(raw.replace("{host}", ctx.host.name)))
        return path if path.is_absolute() else ctx.project / path

    def plan(self, ctx: StepContext) -> Plan:
        """Nothing to pull, the dir is missing (fail unless force), or pull N files."""
        if not self.results:
            return Plan(False, "no results dir given (--results or vars.results_dir); nothing to pull")
        out = ctx.facts.raw[self.probe.name].stdout.split()
        src = f"{ctx.host.name}:{self.results}"
        if not out or out[0] == "missing":
            record = self.dest(ctx) / RECORD
            if record.is_file():  # a rerun after a verified pull removed the dir
                n = len(parse_manifest(record.read_text()))
                return Plan(False, f"{src} is gone; its verified copy ({n} files) is in {self.dest(ctx)}")
            msg = f"results dir {src} not found on the host"
            if self.force:
                return Plan(False, f"{msg}; nothing pulled, continuing (--force)")
            refusal = f"{msg}; refusing to delete anything (pass --force to wipe anyway)"
            return Plan(False, refusal, failed=True)
        count, size = (int(out[1]), int(out[2])) if len(out) >= 3 and out[1].isdigit() else (0, 0)
        if "no-rsync" in out and not self.force:
            return Plan(
                False,
                f"host {ctx.host.name} has no rsync, so {src} cannot be pulled; install rsync there"
                " (refusing to delete anything; --force wipes anyway)",
                failed=True,
            )
        dest = self.dest(ctx)
        return Plan(
            True,
            f"pull {count} files ({format_bytes(size, binary=False)}) from {src} to {dest} and verify"
            " them (sha256)",
            diff={"results": self.results, "dest": str(dest), "files": count, "bytes": size},
        )

    def _inventory(self, ctx: StepContext) -> Inventory | None:
        if ctx.inventory is not None or not self.args.get("inventory"):
            return ctx.inventory
        from .. import inventory as inventory_mod

        return inventory_mod.load(Path(str(self.args["inventory"])))

    def apply(self, ctx: StepContext, plan: Plan) -> Any:
        """rsync into dest (resumable), then compare the host's sha256 manifest with local files."""
        dest = self.dest(ctx)
        dest.mkdir(parents=True, exist_ok=True)
        default_known = ctx.known_hosts or ctx.project / ".gpuonboard" / "known_hosts"
        known = Path(str(self.args.get("known_hosts") or default_known))
        text, alias = openssh.config_text(ctx.host, self._inventory(ctx), known)
        argv = rsync_argv(alias, openssh.write_config(ctx.project, ctx.host, text), self.results, dest)
        try:
            proc = subprocess.run(argv, capture_output=True, text=True)
            code, err = proc.returncode, _last_line(proc.stderr, proc.returncode) if proc.returncode else ""
        except FileNotFoundError:
            code, err = 127, "rsync is not installed on this machine"
        result = ctx.runner.run(manifest_command(self.results))
        if not result.ok:
            return PullOutcome(code, err, {}, [], [], _last_line(result.stderr, result.exit_code))
        remote = parse_manifest(result.stdout)
        missing, corrupt = compare_manifests(remote, local_manifest(dest, remote))
        return PullOutcome(code, err, remote, missing, corrupt)

    def verify(self, ctx: StepContext, plan: Plan, applied: Any) -> str | None:
        """Refuse (fail, so nothing is deleted) unless every remote file is here with its sha256."""
        out: PullOutcome = applied
        dest = self.dest(ctx)
        src = f"{ctx.host.name}:{self.results}"
        plan.diff = {**(plan.diff or {}), "verified": len(out.remote) - len(out.missing) - len(out.corrupt)}
        plan.diff.update(missing=out.missing, corrupt=out.corrupt, rsync_exit=out.rsync_code)
        rsync_note = f" (rsync exit {out.rsync_code}: {out.rsync_error})" if out.rsync_code else ""
        if out.manifest_error:
            problem = f"could not compute the sha256 manifest on the host ({out.manifest_error})"
        elif out.missing or out.corrupt:
            problem = describe_problems(out.missing, out.corrupt, len(out.remote))
        else:
            plan.msg = f"pulled {src} to {dest}: {len(out.remote)} files verified (sha256){rsync_note}"
            lines = [f"{d}  ./{n}" for n, d in sorted(out.remote.items()) if "\n" not in n and "\\" not in n]
            (dest / RECORD).write_text("\n".join(lines) + "\n")
            return None
        if self.force:
            plan.msg = f"pull of {src} to {dest} NOT verified: {problem}{rsync_note}; wiping anyway (--force)"
            return None
        return (
            f"refusing to delete anything on {ctx.host.name}: the pull of {src} to {dest} is incomplete:"
            f" {problem}{rsync_note}; rerun teardown to resume the pull, or pass --force to wipe anyway"
        )


def _guarded_rm_script(targets: Sequence[tuple[str, str]]) -> str:
    """sh: for each (path, resolved path seen by the probe) re-resolve, compare, then rm -rf.

    A path whose resolution changed since the probe (a new symlink) is left alone.
    """
    lines = ["rc=0"]
    for path, resolved in targets:
        p, r = shell.quote(path), shell.quote(resolved)
        lines.append(
            f'if [ -e {p} ] || [ -L {p} ]; then if [ "$(realpath -m -- {p})" = {r} ]; then'
            # a mount point keeps its (now empty) directory: rm's EBUSY on it is fine
            f' rm -rf -- {p} 2>/dev/null || {{ mountpoint -q {p} && [ -z "$(ls -A {p})" ]; }}'
            f" || {{ echo could not remove {p} >&2; rc=1; }}; else echo changed {p} >&2; rc=1; fi; fi"
        )
    lines.append("exit $rc")
    return "\n".join(lines)


class TeardownFilesStep(Step):
    """Remove directories provisioning placed (dataset, decrypted data, markers, pulled results)."""

    name = "teardown_files"
    read_only = False
    ARGS = {
        "paths": "remote directories/files to remove ('' entries are ignored: unset vars)",
        "results": "the remote results dir (removed too: its copy was pulled and verified first)",
    }

    def __init__(self, args: Mapping[str, Any], label: str | None = None) -> None:
        super().__init__(args, label)
        raw = self.args.get("paths") or []
        if isinstance(raw, str):
            raw = [raw]
        if not isinstance(raw, list):
            raise StepArgsError("argument 'paths' must be a list of paths")
        wanted = [str(p).strip() for p in [*raw, self.args.get("results") or ""]]
        self.paths = list(dict.fromkeys(p for p in wanted if p and p.lower() not in ("none", "null")))
        quoted = " ".join(shell.quote(p) for p in self.paths) or "''"
        command = (
            'echo "home $HOME"; '
            f'for p in {quoted}; do [ -n "$p" ] || continue; '
            'if [ -e "$p" ] || [ -L "$p" ]; then echo "yes $(realpath -m -- "$p")"; else echo no; fi; done'
        )
        self.probe = Probe(_probe_name("teardown_files", command), command)

    def probes(self) -> list[Probe]:
        """$HOME and, per path, whether it exists and where it resolves."""
        return [self.probe] if self.paths else []

    def plan(self, ctx: StepContext) -> Plan:
        """Refuse unsafe paths (before deleting anything); list the ones that exist."""
        if not self.paths:
            return Plan(False, "no provisioned directories configured; nothing to remove")
        lines = ctx.facts.raw[self.probe.name].stdout.splitlines()
        home = lines[0][5:] if lines and lines[0].startswith("home ") else None
        states = lines[1:]
        if len(states) != len(self.paths):
            return Plan(False, f"could not inspect {', '.join(self.paths)} on the host", failed=True)
        present: list[tuple[str, str]] = []
        refused: list[str] = []
        for path, state in zip(self.paths, states, strict=True):
            why = path_problem(path, home)
            resolved = state[4:] if state.startswith("yes ") else ""
            if not why and resolved and resolved != posixpath.normpath(path):
                why = path_problem(resolved, home)
                why = f"it resolves to {resolved}, {why}" if why else None
            if why:
                refused.append(f"{path} ({why})")
            elif resolved:
                present.append((path, resolved))
        if refused:
            return Plan(
                False,
                "refusing to delete unsafe paths: " + "; ".join(refused) + "; fix the host vars",
                failed=True,
            )
        if not present:
            return Plan(False, f"already clean: {_names(self.paths, 5)} not present")
        names = [p for p, _ in present]
        return Plan(True, f"remove {', '.join(names)}", diff={"removed": names}, data=present)

    def apply(self, ctx: StepContext, plan: Plan) -> Any:
        """One remote command removing every path after re-checking its resolution."""
        return ctx.runner.run(shell.sh_c(_guarded_rm_script(plan.data)))

    def verify(self, ctx: StepContext, plan: Plan, applied: Any) -> str | None:
        """The removal must succeed."""
        if applied.ok:
            return None
        return f"could not remove everything: {_last_line(applied.stderr, applied.exit_code)}"


def _image_refs(image: str, mirror: str) -> list[str]:
    """The image's local names: canonical, plus the mirror's copy when pulled through one."""
    if not image:
        return []
    refs = [image]
    if mirror:
        try:
            from .container import mirror_host, parse_ref

            ref = parse_ref(image)
            refs = [ref.canonical, ref.on(mirror_host(mirror))]
        except (ImportError, StepArgsError, AttributeError):
            pass
    return list(dict.fromkeys(refs))


class TeardownContainersStep(Step):
    """Stop and remove the project's containers and (unless keep_image) the training image."""

    name = "teardown_containers"
    read_only = False
    ARGS = {
        "containers": "container names started for this project (e.g. vars.containers)",
        "label": "also remove containers carrying this label key (default gpuonboard)",
        "image": "the training image (vars.container_image)",
        "registry_mirror": "mirror the image was pulled through (its copy is removed too)",
        "keep_image": "keep the image",
    }

    def __init__(self, args: Mapping[str, Any], label: str | None = None) -> None:
        super().__init__(args, label)
        raw = self.args.get("containers") or []
        if isinstance(raw, str):  # a rendered template: "a,b"
            raw = [n.strip() for n in raw.split(",")]
        if not isinstance(raw, list):
            raise StepArgsError("argument 'containers' must be a list of container names")
        self.names = [str(n) for n in raw if str(n).strip()]
        self.label_key = str(self.args.get("label") or "gpuonboard")
        self.keep_image = _truthy(self.args.get("keep_image", False))
        mirror = str(self.args.get("registry_mirror") or "")
        self.images = _image_refs(str(self.args.get("image") or ""), mirror)
        names = " ".join(shell.quote(n) for n in self.names) or "''"
        images = " ".join(shell.quote(i) for i in self.images) or "''"
        fmt = shell.quote("{{.Names}}")
        command = (
            "c=; for x in docker podman; do command -v $x >/dev/null 2>&1 || continue; "
            'if $x info >/dev/null 2>&1; then c=$x; break; else echo "down $x"; fi; done; '
            '[ -n "$c" ] || exit 0; echo "cli $c"; '
            f"$c ps -a --filter label={shell.quote(self.label_key)} --format {fmt} | sed 's/^/ctr /'; "
            f'for n in {names}; do [ -n "$n" ] || continue; '
            '$c container inspect "$n" >/dev/null 2>&1 && echo "ctr $n"; done; '
            f'for i in {images}; do [ -n "$i" ] || continue; '
            '$c image inspect "$i" >/dev/null 2>&1 && echo "img $i"; done; true'
        )
        self.probe = Probe(_probe_name("teardown_containers", command), command)

    def probes(self) -> list[Probe]:
        """Which runtime answers, which of our containers and image refs exist."""
        return [self.probe]

    def plan(self, ctx: StepContext) -> Plan:
        """No runtime: nothing to do; else the containers and image refs to remove."""
        cli, ctrs, imgs, down = "", [], [], []
        for line in ctx.facts.raw[self.probe.name].stdout.splitlines():
            kind, _, rest = line.partition(" ")
            if kind == "cli":
                cli = rest.strip()
            elif kind == "ctr" and rest.strip():
                ctrs.append(rest.strip())
            elif kind == "img":
                imgs.append(rest.strip())
            elif kind == "down":
                down.append(rest.strip())
        if not cli:
            why = f" ({', '.join(down)} installed but not answering)" if down else ""
            return Plan(False, f"no container runtime answers{why}; no containers or image to remove")
        ctrs = list(dict.fromkeys(ctrs))
        kept = imgs if self.keep_image else []
        imgs = [] if self.keep_image else imgs
        parts = []
        if ctrs:
            parts.append(f"stop and remove containers {', '.join(ctrs)}")
        if imgs:
            parts.append(f"remove image {', '.join(imgs)}")
        note = f" (keeping image {', '.join(kept)})" if kept else ""
        if not parts:
            what = "containers" if self.keep_image else "containers or image"
            return Plan(False, f"no project {what} on {cli}{note}")
        return Plan(
            True,
            " and ".join(parts) + f" ({cli}){note}",
            diff={"containers": ctrs, "images": imgs, "kept": kept},
            data=(cli, ctrs, imgs),
        )

    def apply(self, ctx: StepContext, plan: Plan) -> Any:
        """`rm -f` (stops too) the containers, then `rmi` the image refs, in one command."""
        cli, ctrs, imgs = plan.data
        parts = []
        if ctrs:
            parts.append(shell.join([cli, "rm", "-f", *ctrs]))
        if imgs:
            parts.append(shell.join([cli, "rmi", *imgs]))
        return ctx.runner.run(shell.sh_c(" && ".join(parts)))

    def verify(self, ctx: StepContext, plan: Plan, applied: Any) -> str | None:
        """The runtime must have removed them."""
        if applied.ok:
            return None
        return f"could not remove containers/image: {_last_line(applied.stderr, applied.exit_code)}"


class TeardownCostStep(Step):
    """Read-only: what the rental cost from provisioning (or vars.rented_since) to now."""

    name = "teardown_cost"
    read_only = True
    ARGS = {
        "since": "rental start (vars.rented_since): epoch seconds or ISO 8601; default: the journal",
        "unit": "billing unit: second | minute | hour (vendor billing.unit)",
        "rate": "price per hour (vendor billing.rate)",
        "currency": "currency (vendor billing.currency)",
        "state_dir": "journal directory (default .gpuonboard/state under the project)",
        "now": "end of the rental in epoch seconds (default: now; for tests)",
    }

    def plan(self, ctx: StepContext) -> Plan:
        """Compute the cost; never fails the run (an unknown start is said in the message)."""
        try:
            since = parse_since(self.args.get("since"))
        except ValueError as exc:
            return Plan(False, f"cost unknown: vars.rented_since: {exc}")
        source = "vars.rented_since"
        if since is None:
            state_dir = Path(str(self.args.get("state_dir") or ctx.project / ".gpuonboard" / "state"))
            found = journal_start(state_dir, ctx.host.name)
            if found is None:
                return Plan(
                    False, "cost unknown: no provision run in the journal; set vars.rented_since on the host"
                )
            since, source = found
        unit = str(self.args.get("unit") or "hour")
        raw_rate = self.args.get("rate")
        try:
            rate = float(raw_rate) if raw_rate not in (None, "", "None") else None
            now = float(self.args["now"]) if self.args.get("now") not in (None, "") else time.time()
            cost = rental_cost(since, now, unit, rate, str(self.args.get("currency") or ""), source)
        except (TypeError, ValueError) as exc:
            return Plan(False, f"cost unknown: {exc}")
        return Plan(False, cost.text(), diff={"cost": cost.to_json()})
