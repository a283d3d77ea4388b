"""Ansible-style --limit patterns: their terms, the bounds on their size, the `~regex` terms
matched in a time-limited child Python, and the compiled test of whether a host (its name and
groups) is selected.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable, Mapping, Sequence

from gpuonboard.errors import UsageError
from gpuonboard.yamlload import shown

# A --limit names a few hosts or groups; these bound what one may cost (a 130 kB list of 25,000
# globs over 2,000 hosts took over 30 s; a 14,000-class regex minutes to compile)
MAX_LIMIT_CHARS = 64 << 10
MAX_LIMIT_TERMS = 1_000
MAX_LIMIT_REGEX_CHARS = 1_000


def limit_problem(pattern: str) -> str | None:
    """Pure: why a --limit pattern is refused for its size (one sentence), else None."""
    if len(pattern) > MAX_LIMIT_CHARS:
        return (
            f"--limit pattern is longer than {MAX_LIMIT_CHARS >> 10} KiB ({len(pattern):,} characters);"
            " select by group (--group) or with a few globs like 'gpu-*'."
        )
    terms = limit_terms(pattern)
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
    """The terms of a --limit pattern: split at commas, or, as Ansible does, at colons
    (`gpus:!gpu-3`) where a term is not an IPv6 address (`2001:db8::7`)."""
    terms: list[str] = []
    for part in (p.strip() for p in pattern.split(",")):
        if not part:
            continue
        bare = part.lstrip("!&")
        if ":" in bare and not bare.startswith("~") and not _looks_like_ipv6(bare):
            terms += [t.strip() for t in part.split(":") if t.strip()]
        else:
            terms.append(part)
    return terms


def _looks_like_ipv6(text: str) -> bool:
    """An IPv6 address or a glob over one (`2001:db8::*`): two colons or more, hex digits."""
    return text.count(":") >= 2 and all(c in "0123456789abcdefABCDEF:.*?[]%" for c in text)


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


def regex_hits(pattern: str, targets: Sequence[str]) -> dict[str, frozenset[str]]:
    """The names among `targets` that each `~regex` term of a --limit matches, computed by a
    child Python under REGEX_TIME_LIMIT_S (a match cannot be interrupted in a thread, and a
    signal only works in the main thread); a regex past the limit is a UsageError. {} when the
    pattern has no regex."""
    regexes = list(
        dict.fromkeys(t.lstrip("!&")[1:] for t in limit_terms(pattern) if t.lstrip("!&")[:1] == "~")
    )
    if not regexes:
        return {}
    import json
    import subprocess
    import sys

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
            f"--limit pattern {pattern!r}: its regular expression took more than {REGEX_TIME_LIMIT_S:g} s"
            " on the inventory's host and group names (it backtracks without end, like '(a+)+$');"
            " simplify it, or use a glob like 'gpu-*'."
        ) from None
    if child.returncode != 0:
        last = (child.stderr.strip().splitlines() or ["no output"])[-1]
        raise UsageError(
            f"--limit pattern {pattern!r}: its regular expression could not be matched ({last})."
        )
    found = json.loads(child.stdout)
    for regex, idx in zip(regexes, found, strict=True):
        if isinstance(idx, str):  # (re.compile's reason; '(' * 10000: too deep)
            term = next(t for t in limit_terms(pattern) if t.lstrip("!&")[1:] == regex)
            raise UsageError(
                f"--limit pattern {term!r} is not a valid regular expression ({idx});"
                " fix it, or use a glob like 'gpu-*'."
            )
    return {r: frozenset(targets[i] for i in idx) for r, idx in zip(regexes, found, strict=True)}


class _LimitTerms:
    """Terms of one role in a --limit (to include, or to exclude), compiled once for all hosts:
    the globs as one regular expression, the `~regex` terms as the names they matched."""

    def __init__(self, pats: Sequence[str], hits: Mapping[str, frozenset[str]] | None) -> None:
        self.all = "all" in pats
        self.ungrouped = "ungrouped" in pats
        globs = [p for p in pats if not p.startswith("~")]
        self.glob = re.compile("|".join(f"(?:{fnmatch.translate(g)})" for g in globs)) if globs else None
        self.regex_names: set[str] = set()
        self.regexes: list[re.Pattern[str]] = []
        for pat in (p[1:] for p in pats if p.startswith("~")):
            if hits is not None and pat in hits:
                self.regex_names |= hits[pat]
            else:  # (no time-bounded answer given: run it here)
                self.regexes.append(re.compile(pat))

    def hit(self, targets: Sequence[str], ungrouped: bool) -> bool:
        if self.all or (self.ungrouped and ungrouped):  # Ansible's implicit groups
            return True
        if self.glob is not None and any(self.glob.match(t) for t in targets):
            return True
        if any(t in self.regex_names for t in targets):
            return True
        return any(r.match(t) for r in self.regexes for t in targets)


def compile_limit(
    pattern: str, regex_hits: Mapping[str, frozenset[str]] | None = None
) -> Callable[[str, Iterable[str]], bool]:
    """Ansible-style --limit, split and compiled once: comma- (or colon-) separated globs over
    host or group names; `!pat` excludes, `&pat` must also match (intersection), `~regex`
    matches by regular expression, `all` is every host and `ungrouped` a host of no group.
    `regex_hits` (from regex_hits(), time-bounded) answers the `~regex` terms; without it they
    run here. Returns whether a host (its name and groups) is selected."""
    terms = limit_terms(pattern)
    include = _LimitTerms([t for t in terms if not t.startswith(("!", "&"))], regex_hits)
    any_include = any(not t.startswith(("!", "&")) for t in terms)
    require = [_LimitTerms([t[1:]], regex_hits) for t in dict.fromkeys(terms) if t.startswith("&")]
    exclude = _LimitTerms([t[1:] for t in terms if t.startswith("!")], regex_hits)

    def selects(name: str, groups: Iterable[str]) -> bool:
        targets = [name, *groups]
        ungrouped = len(targets) == 1
        if any_include and not include.hit(targets, ungrouped):
            return False
        if not all(r.hit(targets, ungrouped) for r in require):
            return False
        return not exclude.hit(targets, ungrouped)

    return selects


def matches_limit(
    name: str, groups: Iterable[str], pattern: str, regex_hits: Mapping[str, frozenset[str]] | None = None
) -> bool:
    """Whether one host is selected by a --limit pattern (compile_limit, for a single host)."""
    return compile_limit(pattern, regex_hits)(name, groups)
