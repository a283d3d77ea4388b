"""Ansible-style --limit patterns, read as `ansible PATTERN --list-hosts` reads them: their terms
(split at `,`, else at `:`), `@file` terms, subscripts (`gpus[0]`, `gpus[1:3]`, `gpus[-1]`) over
the hosts in Ansible's order, the bounds on their size, the `~regex` terms matched in a
time-limited child Python, and the set of hosts a pattern selects. Also each group's hosts in
the order Ansible lists them (ansible_group_hosts), which subscripts index.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gpuonboard.errors import UsageError
from gpuonboard.once import lazy_re
from gpuonboard.yamlload import did_you_mean, shown

# A --limit names a few hosts or groups; these bound what one may cost (a 130 kB list of 25,000
# globs over 2,000 hosts took over 30 s; a 14,000-class regex minutes to compile)
MAX_LIMIT_CHARS = 64 << 10
MAX_LIMIT_TERMS = 1_000
MAX_LIMIT_REGEX_CHARS = 1_000

# The attribute of an Ansible inventory's converted shape that holds ansible_group_hosts()
ANSIBLE_ORDER = "ansible_group_hosts"

# Ansible's subscript: `pattern[N]`, `pattern[-N]`, `pattern[N:M]`, `pattern[N:]` (and the
# removed `[N-M]`); not on a `~regex`, where brackets are the regex's own
_SUBSCRIPT = lazy_re(r"^(.+)\[(?:(-?[0-9]+)|([0-9]+)([:-])([0-9]*))\]$")
# Ansible's colon-separated terms: runs of anything but space, `:` and brackets, or a whole
# bracketed expression (`web[1:3]:db` is `web[1:3]` and `db`)
_COLON_TERMS = lazy_re(r"(?:[^\s:\[\]]|\[[^\]]*\])+")
_HOST_PORT = lazy_re(r"^(?:[A-Za-z0-9_.-]|\[[^\]]*\])+:[0-9]+$")  # one host `name:port`
_LOCALHOST = ("localhost", "127.0.0.1", "::1")  # Ansible's implicit localhost names
_GLOB_CHARS = "*?["


def limit_problem(pattern: str) -> str | None:
    """Pure: why a --limit pattern is refused for its size (one sentence), else None."""
    if len(pattern) > MAX_LIMIT_CHARS:
        return (
            f"--limit pattern is longer than {MAX_LIMIT_CHARS >> 10} KiB ({len(pattern):,} characters);"
            " select by group (--group) or with a few globs like 'gpu-*'."
        )
    return terms_problem(limit_terms(pattern))


def terms_problem(terms: Sequence[str]) -> str | None:
    """Pure: why the terms of a --limit (with its files' lines) are refused for their count or
    a regex's length (one sentence), else None."""
    if len(terms) > MAX_LIMIT_TERMS:
        return (
            f"--limit pattern has more than {MAX_LIMIT_TERMS:,} terms ({len(terms):,}); select by"
            " group (--group) or with a few globs like 'gpu-*'."
        )
    long = next((t for t in terms if t.lstrip("!&").startswith("~") and len(t) > MAX_LIMIT_REGEX_CHARS), None)
    if long is not None:
        return (
            f"--limit regular expression {shown(long)} is longer than {MAX_LIMIT_REGEX_CHARS:,}"
            " characters; shorten it, or use a glob like 'gpu-*'."
        )
    return None


def limit_terms(pattern: str) -> list[str]:
    """The terms of a --limit pattern as Ansible splits them (split_host_pattern): at commas
    when there is one (then a `:` stays inside its term); else the whole pattern when it is one
    address (`2001:db8::7`, `gpu1:2222`), else at colons outside brackets (`gpus:!gpu-3`,
    `web[1:3]:db`)."""
    if "," in pattern:
        parts = pattern.split(",")
    elif _looks_like_ipv6(pattern.strip()) or _HOST_PORT.match(pattern.strip()):
        parts = [pattern]
    else:
        parts = _COLON_TERMS.findall(pattern)
    return [p.strip() for p in parts if p.strip()]


def _looks_like_ipv6(text: str) -> bool:
    """An IPv6 address (`2001:db8::7`, `[2001:db8::7]:22`): two colons or more, hex digits."""
    return text.count(":") >= 2 and all(c in "0123456789abcdefABCDEF:.%[]" for c in text)


def with_files(terms: Sequence[str]) -> list[str]:
    """The terms with each `@FILE` replaced by that file's lines (one pattern a line, blank
    lines skipped, as Ansible's --limit @FILE reads a .retry file); the file is bounded like a
    pattern, and one that is missing or no file is a UsageError."""
    out: list[str] = []
    for term in terms:
        if not term.startswith("@"):
            out.append(term)
            continue
        path = Path(term[1:])
        if not path.is_file():
            what = "is not a file" if path.exists() else "does not exist"
            raise UsageError(
                f"--limit {term!r}: {path} {what}; Ansible's @FILE names a file of patterns, one a line."
            )
        with path.open(encoding="utf-8", errors="replace") as fh:
            text = fh.read(MAX_LIMIT_CHARS + 1)
        if len(text) > MAX_LIMIT_CHARS:
            raise UsageError(
                f"--limit file {path} is longer than {MAX_LIMIT_CHARS >> 10} KiB; select by group"
                " (--group) or with a few globs like 'gpu-*'."
            )
        out += [line.strip() for line in text.split("\n") if line.strip()]
    return out


@dataclass(frozen=True)
class Term:
    """One term of a --limit: `op` ('', '&' must also match, '!' excludes), the expression
    (a name, a glob, or `~regex`) and Ansible's subscript (start, end) on it, if any."""

    text: str
    op: str
    expr: str
    subscript: tuple[int, int | None] | None = None

    @property
    def regex(self) -> bool:
        return self.expr.startswith("~")


def parse_term(text: str) -> Term:
    """Pure: one term as Ansible reads it (_split_subscript); the removed `[x-y]` subscript is
    a UsageError (Ansible only warns, and reads it as `[x:y]`, where a shell user means a glob)."""
    op = text[0] if text[0] in "!&" else ""
    expr = text[len(op) :]
    if not expr or expr.startswith("~"):
        return Term(text, op, expr)
    m = _SUBSCRIPT.match(expr)
    if m is None:
        return Term(text, op, expr)
    base, index, start, sep, end = m.groups()
    if index is not None:
        return Term(text, op, base, (int(index), None))
    if sep == "-":
        raise UsageError(
            f"--limit pattern {text!r}: Ansible has removed the [x-y] subscript (it warns and reads"
            f" it as [x:y]); write {op}{base}[{start}:{end}] for hosts {start} to {end} of {base!r},"
            f" or ~regex for a character range."
        )
    return Term(text, op, base, (int(start), int(end) if end else -1))


def check_terms(terms: Sequence[str], hosts: Sequence[str], groups: Sequence[str], source: object) -> None:
    """A term that is a plain name (no glob, no regex) but neither a host nor a group of this
    inventory is a typo (`!node-02` meant to spare node-02 would spare nothing, and `teardown`
    would take that box too): a UsageError that says what Ansible would have read, where a
    subscript or an unsplit `:` made the name."""
    known = {*hosts, *groups, "all", "ungrouped"}
    for text in terms:
        term = parse_term(text)
        if term.regex or any(c in term.expr for c in _GLOB_CHARS) or term.expr in known:
            continue
        if term.expr in _LOCALHOST:
            raise UsageError(
                f"--limit pattern {text!r} names Ansible's implicit localhost, which is no host of"
                f" {source}; add it to the inventory (ansible_connection=local) to take it."
            )
        sentence = (
            f"--limit pattern {text!r} names no host or group in {source}; fix the name"
            f" (run `invoke inventory` to list hosts and groups)"
        )
        if term.subscript is not None:
            sentence += (
                f"; Ansible reads {text[len(term.op) + len(term.expr) :]!r} as a subscript (hosts by"
                f" position) of {term.expr!r}, not as a glob's character class"
            )
        elif ":" in term.expr:
            sentence += "; Ansible splits a pattern at ':' only when it has no ',' (write 'a,!b')"
        raise UsageError(sentence + (did_you_mean(term.expr, known) or "."))


# How long the `~regex` terms of a --limit may take to match every host and group name. Python's
# regular expressions backtrack: `~(a+)+$` over a 40-character name would run for days.
REGEX_TIME_LIMIT_S = 2.0
_REGEX_CHILD = (
    "import json, re, sys\n"
    "d = json.load(sys.stdin)\n"
    "def hits(r):\n"
    "    try:\n"
    "        c = re.compile(r)\n"
    "    except (re.error, RecursionError, OverflowError) as e:\n"
    "        return str(e)\n"
    "    return [i for i, t in enumerate(d['t']) if c.match(t)]\n"
    "print(json.dumps([hits(r) for r in d['r']]))\n"
)


def regex_hits(terms: Sequence[str], targets: Sequence[str]) -> dict[str, frozenset[str]]:
    """The names among `targets` that each `~regex` term of a --limit matches, computed by a
    child Python under REGEX_TIME_LIMIT_S (a match cannot be interrupted in a thread, and a
    signal only works in the main thread); a regex past the limit is a UsageError. {} when
    there is no regex."""
    regexes = list(dict.fromkeys(t.lstrip("!&")[1:] for t in terms if t.lstrip("!&")[:1] == "~"))
    if not regexes:
        return {}
    import json
    import subprocess
    import sys

    shown_terms = shown(",".join(t for t in terms if t.lstrip("!&")[:1] == "~"))
    try:
        child = subprocess.run(
            [sys.executable, "-I", "-S", "-c", _REGEX_CHILD],
            input=json.dumps({"r": regexes, "t": list(targets)}),
            capture_output=True,
            text=True,
            timeout=REGEX_TIME_LIMIT_S,
        )
    except subprocess.TimeoutExpired:
        raise UsageError(
            f"--limit pattern {shown_terms}: its regular expression took more than {REGEX_TIME_LIMIT_S:g} s"
            " on the inventory's host and group names (it backtracks without end, like '(a+)+$');"
            " simplify it, or use a glob like 'gpu-*'."
        ) from None
    if child.returncode != 0:
        last = (child.stderr.strip().splitlines() or ["no output"])[-1]
        raise UsageError(
            f"--limit pattern {shown_terms}: its regular expression could not be matched ({last})."
        )
    found = json.loads(child.stdout)
    for regex, idx in zip(regexes, found, strict=True):
        if isinstance(idx, str):  # (re.compile's reason; '(' * 10000: too deep)
            term = next(t for t in terms if t.lstrip("!&")[1:] == regex)
            raise UsageError(
                f"--limit pattern {term!r} is not a valid regular expression ({idx});"
                " fix it, or use a glob like 'gpu-*'."
            )
    return {r: frozenset(targets[i] for i in idx) for r, idx in zip(regexes, found, strict=True)}


class _Matcher:
    """Ansible's matching of one expression (_enumerate_matches) over an inventory: the hosts of
    every group whose name it matches, in the inventory's group order, then the hosts it
    matches by name when it matched no group or is a glob or regex (duplicates kept, as a
    subscript indexes them)."""

    def __init__(
        self, hosts: Sequence[str], groups: Mapping[str, Sequence[str]], hits: Mapping[str, frozenset[str]]
    ) -> None:
        self.hosts, self.groups, self.hits = hosts, groups, hits
        self.host_set = frozenset(hosts)

    def _names(self, expr: str, names: Sequence[str]) -> list[str]:
        if expr.startswith("~"):
            found = self.hits.get(expr[1:], frozenset())
            return [n for n in names if n in found]
        rx = re.compile(fnmatch.translate(expr))
        return [n for n in names if rx.match(n)]

    def ordered(self, term: Term) -> list[str]:
        """matches() for a subscripted term, refused where Ansible's order is not known here:
        over several groups (Ansible's order of groups is the order it created them), or a
        group whose order Ansible does not fix (UnfixedOrder)."""
        groups = [g for g in self.groups if g in set(self.matches_groups(term.expr))]
        if len(groups) > 1:
            raise UsageError(
                f"--limit pattern {term.text!r}: a subscript over {len(groups)} groups"
                f" ({', '.join(groups[:5])}{', ...' if len(groups) > 5 else ''}) indexes their hosts in"
                " the order Ansible created the groups, which is not kept here; subscript one group"
                f" ({groups[0]}{term.text[len(term.op) + len(term.expr) :]})."
            )
        if groups and isinstance(self.groups[groups[0]], UnfixedOrder):
            raise UsageError(
                f"--limit pattern {term.text!r}: Ansible's order of the hosts of {groups[0]!r} is not"
                " fixed (it walks groups nested two levels deep under two parents as a set, so"
                f" `ansible '{term.text}' --list-hosts` varies between runs); name the hosts, or"
                " subscript a group that lists them itself."
            )
        return self.matches(term.expr)

    def matches_groups(self, expr: str) -> list[str]:
        if not expr.startswith("~") and not any(c in expr for c in _GLOB_CHARS):
            return [expr] if expr in self.groups else []
        return self._names(expr, list(self.groups))

    def matches(self, expr: str) -> list[str]:
        plain = not expr.startswith("~") and not any(c in expr for c in _GLOB_CHARS)
        groups = self.matches_groups(expr)  # (a plain name matches itself only)
        found = [h for g in groups for h in self.groups[g]]
        if not groups or expr.startswith("~") or any(c in expr for c in ".?*["):
            if plain:
                found += [expr] if expr in self.host_set else []
            else:
                found += self._names(expr, self.hosts)
        return found

    def term(self, term: Term) -> list[str]:
        """The hosts of one term (its op ignored), its subscript applied as Ansible applies
        it (_apply_subscript); a position past the end is a UsageError, as Ansible fails."""
        if term.subscript is None:
            return self.matches(term.expr)
        found = self.ordered(term)
        if not found:
            return found
        start, end = term.subscript
        try:
            if end:  # (Ansible's own test: `[2:0]` is the one host at 2)
                return found[start : (len(found) - 1 if end == -1 else end) + 1]
            return [found[start]]
        except IndexError:
            raise UsageError(
                f"--limit pattern {term.text!r} selects no host: {term.expr!r} matches"
                f" {len(found)} host{'s' if len(found) != 1 else ''} (positions 0 to {len(found) - 1},"
                f" or -{len(found)} to -1), and Ansible fails on this subscript too."
            ) from None


def limit_selection(
    terms: Sequence[str],
    hosts: Sequence[str],
    groups: Mapping[str, Sequence[str]],
    hits: Mapping[str, frozenset[str]],
) -> set[str]:
    """Pure: the hosts Ansible selects for these terms (_evaluate_patterns): the union of the
    plain terms (`all` when there is none; a plain term that is a host name is that host),
    then each `&` term intersected, then every `!` term removed. `groups`: each group's hosts
    in Ansible's order, `all` and `ungrouped` included; `hits`: regex_hits()."""
    parsed = [parse_term(t) for t in terms]
    match = _Matcher(hosts, groups, hits)
    host_set = frozenset(hosts)
    regular = [t for t in parsed if not t.op] or [parse_term("all")]
    chosen: set[str] = set()
    plain_globs = []
    for t in regular:
        if t.subscript is None and t.expr in host_set:
            chosen.add(t.expr)
        elif t.subscript is None and not t.regex and any(c in t.expr for c in _GLOB_CHARS):
            plain_globs.append(t.expr)  # (matched together below: 1,000 globs over 2,000 hosts)
        else:
            chosen.update(match.term(t))
    if plain_globs:
        rx = re.compile("|".join(f"(?:{fnmatch.translate(g)})" for g in plain_globs))
        chosen.update(h for g in groups if rx.match(g) for h in groups[g])
        chosen.update(h for h in hosts if rx.match(h))
    for t in parsed:
        if t.op == "&":
            chosen &= set(match.term(t))
    for t in parsed:
        if t.op == "!" and chosen:
            chosen -= set(match.term(t))
    return chosen


def ansible_group_hosts(
    hosts: Sequence[str],
    direct: Mapping[str, Sequence[str]],
    children: Mapping[str, Sequence[str]],
    groups: Sequence[str],
) -> dict[str, tuple[str, ...]]:
    """Pure: each group's hosts in the order Ansible lists them (Group.get_hosts: the group's
    own hosts, then its child groups', level by level), `all` and `ungrouped` included and
    completed as Ansible completes them (a group with no parent is a child of `all`, after
    `ungrouped`; a host of no group is in `ungrouped`); the groups in Ansible's order (`all`,
    `ungrouped`, then as first named). `direct`: the hosts each group lists itself, `children`:
    its child groups, in file order. (Below the first level Ansible walks a set of groups, so
    order there may vary between runs: such a group's hosts are an UnfixedOrder.)"""
    order = list(dict.fromkeys(["all", "ungrouped", *groups]))
    kids = {g: list(dict.fromkeys(children.get(g, ()))) for g in order}
    has_parent = {c for g, cs in kids.items() for c in cs}
    orphans = [g for g in order[1:] if g not in has_parent]
    kids["all"] = list(dict.fromkeys(["ungrouped", *kids["all"], *orphans]))
    own = {g: list(dict.fromkeys(direct.get(g, ()))) for g in order}
    grouped = {h for g in order if g not in ("all", "ungrouped") for h in own[g]}
    own["ungrouped"] = [h for h in own["ungrouped"] if h not in grouped]
    own["ungrouped"] += [h for h in hosts if h not in grouped and h not in own["ungrouped"]]
    out: dict[str, tuple[str, ...]] = {}
    for g in order:
        walk, seen, level = [g, *kids[g]], {g, *kids[g]}, [g, *kids[g]]
        listed = {h for kid in walk for h in own.get(kid, ())}
        fixed = True
        while level:
            blocks = [[c for c in kids.get(p, ()) if c not in seen] for p in level]
            adding = [b for b in blocks if any(h not in listed for c in b for h in own[c])]
            fixed = fixed and len(adding) < 2  # (two parents add hosts: Ansible's set decides)
            nxt = [c for b in blocks for c in b]
            walk += nxt
            seen.update(nxt)
            listed.update(h for c in nxt for h in own[c])
            level = list(dict.fromkeys(nxt))
        found = tuple(dict.fromkeys(h for kid in walk for h in own.get(kid, ())))
        out[g] = found if fixed else UnfixedOrder(found)
    return out


class UnfixedOrder(tuple[str, ...]):
    """A group's hosts whose order Ansible does not fix (their groups are nested two levels or
    more under two parents: Ansible walks them as a set), so a subscript on it is refused."""
