"""The host's results as the pull sees them: the probe before it and the manifest command after
rsync (the listing of every entry, the name and symlink checks, the sha256 of every file: the
transfer's SUMS_SCRIPT), their parsers, and the listing's digest and changes that the removal
compares with the record."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from gpuonboard import sh, shell
from gpuonboard.steps.teardown.common import rel_path
from gpuonboard.steps.teardown.records import RECORD
from gpuonboard.transfer import PARTIAL_DIR, SUMS_SCRIPT, parse_manifest, uploadlock

# `%y %s %T@ %p` of each file and symlink: what the removal compares with the verified pull
LISTING_FORMAT = "%y %s %T@ %p"


# sh: each upload `sync` recorded on the host (uploadlock.UPLOADS_RECORD), one a line, with its
# stores: what teardown_files removes of them (it reads the same record)
_RECORDED_REMOVED = (
    f'r="{uploadlock.UPLOADS_RECORD}"; if [ -f "$r" ]; then tr \'\\0\' \'\\n\' < "$r" |'
    " while IFS= read -r x; do case $x in /?*) printf '%s\\n%s.shards\\n%s.encrypted\\n'"
    ' "$x" "$x" "$x" ;; esac; done; fi'
)


def names_checks_script(removed: Sequence[str] | None, recorded: bool = False) -> str:
    """sh, run in the results dir with $root its physical path: one NUL-terminated record per
    entry bearing a name teardown keeps for itself (`reserved ./x`), and per symlink whose target
    is missing (`dangling ./x`, then `to TARGET` as the link says it), resolves into one of the
    `removed` dirs (resolved on the host: `doomed ./x`, `to TARGET`) or elsewhere outside $root
    (`outside ./x`, `to TARGET`); with `recorded`, the uploads `sync` recorded on the host (and
    their stores) count as removed dirs too. With `removed` None (not known) every target outside
    $root counts as doomed, and a `strict` record says so. Each device node, fifo or socket: `special
    TYPE ./x` (find's %y letter: b, c, p, s); the pull never copies them."""
    judge = sh.load("teardown_link_judge")
    if removed is None:
        gone = "g='*' && printf 'strict\\0'"
    else:
        each = " ".join(shell.quote(d) for d in removed if d)
        listed = [f'for d in {each}; do realpath -m -- "$d"; done'] if each else []
        listed += [_RECORDED_REMOVED] if recorded else []
        gone = f"g=$({'; '.join(listed)})" if listed else "g="
    return (
        f"find . \\( -name {shell.quote(PARTIAL_DIR)} -o -path {shell.quote('./' + RECORD + '*')} \\)"
        f" -printf 'reserved %p\\0' && "
        "find . \\( -type b -o -type c -o -type p -o -type s \\) -printf 'special %y %p\\0' && "
        f"{gone} && "
        f'find . -type l -exec sh -c {shell.quote(judge)} sh "$root" "$g" {{}} +'
    )


def records(text: str) -> list[tuple[str, str]]:
    """NUL-terminated `kind rest` records -> [(kind, rest)] (a name may hold any byte but NUL)."""
    out = []
    for token in text.split("\0"):
        if token:
            kind, _, rest = token.partition(" ")
            out.append((kind, rest))
    return out


@dataclass(frozen=True)
class TreeChecks:
    """What the host's results hold that a verified copy cannot stand for.

    `bad_links`: symlinks whose target teardown deletes (in a dir it removes; any target outside
    the results when those dirs are not known: `strict`), as (path, target). `kept_links`:
    symlinks to a missing target or to one outside every removed dir: copied as links, their
    targets stay where they are. `specials`: device nodes, fifos and sockets as (path, find's
    %y letter): never pulled (rsync --no-devices --no-specials), said in the step's message."""

    reserved: tuple[str, ...] = ()
    bad_links: tuple[tuple[str, str], ...] = ()
    kept_links: tuple[tuple[str, str], ...] = ()
    strict: bool = False
    specials: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, recs: Iterable[tuple[str, str]]) -> TreeChecks:
        """From `reserved` / `dangling` / `outside` / `doomed` records (each link's `to TARGET` after
        it); a `strict` record: the removed dirs were not known, every link out of the results is bad."""
        recs = list(recs)
        strict = ("strict", "") in recs
        reserved: list[str] = []
        specials: list[tuple[str, str]] = []
        links: list[tuple[str, str, str]] = []
        for kind, rest in recs:
            if kind == "reserved":
                reserved.append(rel_path(rest))
            elif kind == "special":
                letter, _, path = rest.partition(" ")
                specials.append((rel_path(path), letter))
            elif kind in ("dangling", "outside", "doomed"):
                links.append((kind, rel_path(rest), ""))
            elif kind == "to" and links and not links[-1][2]:
                links[-1] = (*links[-1][:2], rest)
        bad = sorted((p, t) for k, p, t in links if k == "doomed" or (strict and k != "doomed"))
        kept = sorted((p, t) for k, p, t in links if k != "doomed" and not strict)
        return cls(tuple(sorted(reserved)), tuple(bad), tuple(kept), strict, tuple(sorted(specials)))

    def problem(self, src: str, results: str) -> tuple[str, str] | None:
        """(what is wrong, what to do) or None."""
        if self.reserved:
            return (
                f"{src} holds {self.reserved[0]}, a name teardown keeps for its own files (rsync's"
                " partial files, the verification record), so it would not be pulled",
                "rename it on the host, then rerun",
            )
        if self.bad_links:
            n, (first, target) = len(self.bad_links), self.bad_links[0]
            where = "is outside it or missing" if self.strict else "lies in a directory teardown deletes"
            return (
                f"{src} holds {n} symlink{'' if n == 1 else 's'} whose target {where}"
                f" (first: {first} -> {target}), so the copy would not hold that data",
                f"copy the targets into {results} (or delete the links) on the host, then rerun",
            )
        return None

    def kept_note(self) -> str:
        """'; 2 symlinks are copied as links ...' for the links whose targets stay, or ''."""
        if not self.kept_links:
            return ""
        n, (first, target) = len(self.kept_links), self.kept_links[0]
        s = "" if n == 1 else "s"
        return (
            f"; {n} symlink{s} copied as link{s}, not their targets (missing, or outside every directory"
            f" teardown removes, so they stay; first: {first} -> {target})"
        )

    def specials_note(self) -> str:
        """'; not pulled: 1 device node (first: ...) ...' for the special files, or ''.

        A device node, fifo or socket holds no data a copy could keep, and on this machine a
        device node (a raw disk, /dev/mem) is a hazard: never pulled; a device node in results
        is suspicious (no training job writes one), so it is named as such."""
        if not self.specials:
            return ""
        kinds = {"b": "a block device", "c": "a character device", "p": "a fifo", "s": "a socket"}
        devices = [(p, k) for p, k in self.specials if k in ("b", "c")]
        others = [(p, k) for p, k in self.specials if k not in ("b", "c")]
        parts = []
        if devices:
            n, (first, kind) = len(devices), devices[0]
            parts.append(f"{n} device node{'' if n == 1 else 's'} (first: {first}, {kinds.get(kind, kind)})")
        if others:
            n, (first, kind) = len(others), others[0]
            parts.append(
                f"{n} fifo{'' if n == 1 else 's'} or socket{'' if n == 1 else 's'}"
                f" (first: {first}, {kinds.get(kind, kind)})"
            )
        note = f"; not pulled: {' and '.join(parts)}, which hold no data to copy"
        if devices:
            note += " (a device node in results is suspicious: check what on the host made it)"
        return note


def parse_pull_output(text: str) -> tuple[list[str], TreeChecks, dict[str, str]]:
    """The manifest command's output -> (listing of files and symlinks, checks, sha256 manifest)."""
    head, sep, sums = text.partition("\0sums\0")
    if not sep:
        head, sums = (text[:-5], "") if text.endswith("sums\0") else (text, "")
    recs = records(head)
    listing = [rest for kind, rest in recs if kind == "e" and rest[:2] in ("f ", "l ")]
    return listing, TreeChecks.of(recs), parse_manifest(sums)


def listing_digest(entries: Iterable[str]) -> str:
    """sha256 of the entries as the host's `find -printf 'FMT\\0' | LC_ALL=C sort -z` prints them."""
    raw = sorted(e.encode("utf-8", "surrogateescape") for e in entries)
    return hashlib.sha256(b"".join(r + b"\0" for r in raw)).hexdigest()


def listing_changes(before: Iterable[str], after: Iterable[str]) -> list[str]:
    """Paths (relative) of files/symlinks new or changed (size, mtime, kind) since `before`,
    then those gone; each listing entry is `%y %s %T@ %p`."""

    def table(entries: Iterable[str]) -> dict[str, str]:
        out = {}
        for e in entries:
            parts = e.split(" ", 3)
            if len(parts) == 4:
                out[rel_path(parts[3])] = " ".join(parts[:3])
        return out

    old, new = table(before), table(after)
    changed = sorted(p for p, v in new.items() if old.get(p) != v)
    return changed + sorted(p for p in old if p not in new)


def unhashed(listing: Iterable[str], sums: Mapping[str, str]) -> list[str]:
    """Pure: the regular files of a listing (`f %s %T@ %p`) that the sha256 manifest lacks."""
    files = (e.split(" ", 3) for e in listing if e.startswith("f "))
    return sorted(rel_path(p[3]) for p in files if len(p) == 4 and rel_path(p[3]) not in sums)


def manifest_command(remote_dir: str, removed: Sequence[str] | None = None, recorded: bool = False) -> str:
    """One remote command, in remote_dir: the listing of every entry (`e %y %s %T@ %p`, taken
    BEFORE hashing, so a file written meanwhile differs from the record), the name and symlink
    checks, then `sums` and the sha256 of every file as `./relative/path`."""
    return shell.sh_c(
        f"export LC_ALL=C; cd -- {shell.quote(remote_dir)} && root=$(pwd -P) && "
        f"find . -printf 'e {LISTING_FORMAT}\\0' && {names_checks_script(removed, recorded)} && "
        f"printf 'sums\\0' && {SUMS_SCRIPT}"
    )


def pull_probe_command(remote_dir: str, removed: Sequence[str] | None = None, recorded: bool = False) -> str:
    """The pull step's probe: NUL-terminated records `home`, `rsync`/`no-rsync`, then for the
    results dir `missing`, `notdir KIND`, or `real PATH`, `files N BYTES` and the checks
    (sh/teardown_pull_probe.sh, the dir and the checks set before it)."""
    return (
        f"d={shell.quote(remote_dir or '/')}\n"
        f"checks() {{ {names_checks_script(removed, recorded)}; }}\n" + sh.load("teardown_pull_probe")
    )
