"""The configured dirs `teardown_files` empties only of what gpuonboard's uploads wrote there
(vars.dataset_dir, vars.decrypted_dir): the host script (sh/teardown_emptied.sh) that probes and
removes, and the pure reading of its probe. Before, teardown removed these dirs whole, and with
them a job's checkpoint written into the dataset dir after the upload, unpulled and unnamed."""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass

from gpuonboard import sh, shell
from gpuonboard.steps.teardown.common import shown_names
from gpuonboard.transfer import uploadlock
from gpuonboard.units import format_bytes

# sh: the names and functions the script reads (see its header)
_PRELUDE = (
    f'w="{uploadlock.WRITTEN_DIR}"; u="{uploadlock.UPLOADS_RECORD}";'
    f" mark={shell.quote(uploadlock.COPY_MARK)}; inlease={shell.quote(uploadlock.LEASE_IN_COPY)};"
    f" fsleft={shell.quote(uploadlock.FSNOW_LEFT)}\n"
    f"{uploadlock.WRITTEN_FN}\n{uploadlock.CURRENT_LISTING_FN}\ncutm() {{ {uploadlock.MTIME_CUT}; }}\n"
    + uploadlock.SHARED_FS_FN
)


def _script(act: str) -> str:
    return f"act={act}\n{_PRELUDE}{sh.load('teardown_emptied')}"


def probe_command(paths: Sequence[str]) -> str:
    """sh, reading only: per path `emptied PATH`, then `none` (not a directory, or a symlink: the
    path check refuses it) or `dir RESOLVED` and the script's probe records; NUL-terminated."""
    parts = ["export LC_ALL=C"]
    for path in paths:
        p = shell.quote(path)
        parts.append(
            f"printf 'emptied %s\\0' {p}; if [ -d {p} ] && ! [ -L {p} ]; then r=$(realpath -- {p});"
            f" printf 'dir %s\\0' \"$r\"; ( {_script('probe')}\n); else printf 'none\\0'; fi"
        )
    return "\n".join(parts) + "\ntrue"


def remove_lines(path: str, resolved: str) -> str:
    """sh for the removal script: empty `path` of what uploads wrote there and is unchanged (the
    lists compared again now), its empty dirs, then the dir when empty; left alone when it
    resolves elsewhere now (sets rc=1 and says so on stderr)."""
    p, r = shell.quote(path), shell.quote(resolved)
    return (
        f'if [ -e {p} ] || [ -L {p} ]; then if [ -L {p} ] || [ "$(realpath -m -- {p})" != {r} ]; then'
        f" echo changed {p} >&2; rc=1; else ( r={r}; {_script('remove')}\n); fi; fi"
    )


def _gone_advice(machines: Sequence[str]) -> str:
    """What to do where the machines whose lists cover the dir are gone (a clone's or a renamed
    machine's list outlives it): remove their lists
    and run the teardown again."""
    lists = " ".join(f"~/.cache/gpuonboard/written.{n}" for n in machines[:3])
    return (
        f"; where {'that machine is' if len(machines) == 1 else 'those machines are'} gone, its list"
        f" of what uploads wrote keeps it: remove it (`rm -rf -- {lists}`, or under $XDG_CACHE_HOME)"
        " and run the teardown again"
    )


@dataclass(frozen=True)
class Emptied:
    """What the probe found in one configured dir: `remove` entries uploads wrote there and that
    are unchanged (removed), `kept` the others (`changed` of them listed as written but different
    now), their size, and samples (size, path relative to the dir); `lists`: how many upload
    trees' lists of what they wrote cover it (0: nothing there was written by an upload)."""

    path: str
    resolved: str
    lists: int
    remove: int
    kept: int
    kept_bytes: int
    changed: int
    new_samples: tuple[tuple[int, str], ...] = ()
    changed_samples: tuple[tuple[int, str], ...] = ()
    # other machines sharing this home whose list of what uploads wrote covers it too (a dir they
    # share, such as NFS): nothing in it is removed
    theirs: tuple[str, ...] = ()
    # the stores (X.shards, X.encrypted) this machine's uploads recorded in it: (path, entries
    # kept there, their bytes); they hold no list of what the upload wrote, so they stay, named
    stores: tuple[tuple[str, int, int], ...] = ()

    def note(self) -> str:
        """What the message says of what stays in the dir ('' when nothing stays)."""
        if self.theirs:
            return (
                f"; kept: {self.path} as it is: other machines sharing this home uploaded into it too"
                f" ({shown_names(list(self.theirs), 3)}; a dir they share, such as NFS), in use there"
                " maybe, so nothing in it was removed; the teardown of the last machine that uploaded"
                " there empties it" + _gone_advice(self.theirs)
            )
        if not self.kept:
            return ""
        in_stores = sum(n for _, n, _ in self.stores)
        note = self._stores_note()
        if self.kept <= in_stores:  # (all that stays is in the upload's stores)
            return note
        return self._others_note(self.kept - in_stores) + note

    def _stores_note(self) -> str:
        """What the message says of the upload's stores in the dir ('' when none holds anything)."""
        stores = [(p, n, b) for p, n, b in self.stores if n]
        if not stores:
            return ""
        n, size = sum(x[1] for x in stores), sum(x[2] for x in stores)
        one = len(stores) == 1
        names = ", ".join(posixpath.basename(p) for p, _, _ in stores)
        return (
            f"; kept in {self.path}: gpuonboard's upload store{'' if one else 's'} {names} ({_files(n)},"
            f" {format_bytes(size)}): a store holds no list of what the upload wrote in it, so a file of"
            f" yours there cannot be told from the upload's; remove {'it' if one else 'them'} yourself once"
            f" nothing there is needed (rm -rf -- {' '.join(shell.quote(p) for p, _, _ in stores)})"
        )

    def _others_note(self, kept: int) -> str:
        """What the message says of the `kept` entries outside the upload's stores."""
        if not self.lists:
            shown = shown_names([repr(n) for _, n in self.new_samples + self.changed_samples], 3)
            return (
                f"; kept: {self.path} as it is ({_files(kept)}, {format_bytes(self._bytes_outside())}, e.g."
                f" {shown}): no upload listed what it wrote there (filled by other means, such as scp),"
                " so nothing in it was removed; pull what you need, then remove it yourself"
                f" (rm -rf -- {shell.quote(self.path)})"
            )
        parts = []
        new = kept - self.changed
        if new:
            parts.append(f"{_files(new)} no upload wrote ({_samples(self.new_samples, new)})")
        if self.changed:
            shown = _samples(self.changed_samples, self.changed)
            parts.append(f"{_files(self.changed)} changed since uploaded ({shown})")
        them = "it" if kept == 1 else "them"
        return (
            f"; kept in {self.path}: {' and '.join(parts)}: pull {them} or remove {them} yourself"
            " (the dir stays)"
        )

    def _bytes_outside(self) -> int:
        """The bytes of the kept entries outside the upload's stores."""
        return self.kept_bytes - sum(b for _, _, b in self.stores)


def _files(n: int) -> str:
    return f"{n} file{'' if n == 1 else 's'}"


def _samples(samples: Sequence[tuple[int, str]], n: int) -> str:
    shown = ", ".join(f"{name}, {format_bytes(size)}" for size, name in samples)
    return shown + (f" (+{n - len(samples)} more)" if n > len(samples) else "")


def parse_probe(output: str) -> dict[str, Emptied | None]:
    """Pure: probe_command's output -> path -> Emptied (None: not a directory there, or a probe
    cut short: nothing is removed from it)."""
    found: dict[str, Emptied | None] = {}
    for chunk in output.split("\0emptied "):
        recs = chunk.removeprefix("emptied ").split("\0")
        if len(recs) < 2:
            continue
        path = recs[0]
        found[path] = _read(path, recs[1:])
    return found


def _read(path: str, recs: Sequence[str]) -> Emptied | None:
    """One dir's records (after `emptied PATH`) -> Emptied, or None without a complete probe."""
    if not recs or not recs[0].startswith("dir "):
        return None
    resolved = recs[0][4:]
    head: dict[str, list[str]] = {}
    new: list[tuple[int, str]] = []
    changed: list[tuple[int, str]] = []
    theirs: tuple[str, ...] = ()
    stores: list[tuple[str, int, int]] = []
    for rec in recs[1:]:
        word, _, rest = rec.partition(" ")
        if word in ("new", "changed"):
            size, _, name = rest.partition(" ")
            rel = posixpath.relpath(name, resolved) if name.startswith(resolved.rstrip("/") + "/") else name
            (new if word == "new" else changed).append((int(size) if size.isdecimal() else 0, rel))
        elif word in ("lists", "remove", "kept"):
            head[word] = rest.split(" ")
        elif word == "store":
            n, size, where = (rest.split(" ", 2) + ["", "", ""])[:3]
            if n.isdecimal() and size.isdecimal() and where:
                stores.append((where, int(n), int(size)))
        elif word == "theirs":
            theirs = tuple(n for n in rest.split(" ") if n)
    nums = [*head.get("lists", []), *head.get("remove", []), *head.get("kept", [])]
    if len(nums) != 5 or not all(n.isdecimal() for n in nums):
        return None  # (cut short: never read as `nothing kept`)
    lists, remove, kept, kept_bytes, changed_n = map(int, nums)
    return Emptied(
        path,
        resolved,
        lists,
        remove,
        kept,
        kept_bytes,
        changed_n,
        tuple(new),
        tuple(changed),
        theirs,
        tuple(stores),
    )
