"""How faithfully gpuonboard resolves SSH config aliases: every alias of the corpus under
tests/fixtures/ssh_config/ (each shape a folder with a `config` whose first line lists its
aliases) resolved by gpuonboard and by OpenSSH's own `ssh -G`, field by field.

Prints two figures:
- "N/N aliases agree with ssh -G": gpuonboard with `ssh` installed (sshresolve) against the
  plain `ssh -G -F config alias` (hostname, port, user, identity and certificate files with
  `~` and tokens expanded, proxyjump, proxycommand; an alias ssh refuses must be refused);
- the own reader (no `ssh` on PATH) against the same: agree, refused in one sentence, differ
  (differ must be 0: the fallback either agrees or says what it cannot read).

Usage: python bench/ssh_g_agreement.py [CORPUS_DIR]
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuonboard.errors import InventoryError
from gpuonboard.inventory.sshconfig import UserSSHConfig
from gpuonboard.inventory.sshlookup import followable
from gpuonboard.inventory.sshresolve import OpenSSHConfig, parse_dump

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "ssh_config"
FIELDS = ("hostname", "port", "user", "identityfile", "certificatefile", "proxyjump", "proxycommand")


@dataclass
class Tally:
    """Counts of one comparison, and the aliases that differ (with why)."""

    agree: int = 0
    refused: int = 0
    differ: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.agree + self.refused + len(self.differ)


def shapes(corpus: Path, into: Path) -> Iterator[tuple[str, Path, list[str]]]:
    """Each shape copied into `into` with `@DIR@` replaced by its folder: (name, config, aliases)."""
    for folder in sorted(p for p in corpus.iterdir() if (p / "config").is_file()):
        target = into / folder.name
        shutil.copytree(folder, target)
        for path in target.rglob("*"):
            if path.is_file():
                path.write_text(path.read_text().replace("@DIR@", str(target)))
                path.chmod(0o600)
        first = (target / "config").read_text().splitlines()[0]
        yield folder.name, target / "config", first.removeprefix("# aliases:").split()


def _expand(path: str, values: dict[str, str]) -> str:
    """An identity or certificate path as ssh opens it (a small expander of its own)."""
    out, i = [], 0
    while i < len(path):
        if path[i] == "%" and i + 1 < len(path):
            out.append(values.get(path[i + 1], "%" + path[i + 1]))
            i += 2
        else:
            out.append(path[i])
            i += 1
    text = "".join(out)
    return values["d"] + text[1:] if text == "~" or text.startswith("~/") else text


def truth(program: str, config: Path, alias: str) -> dict[str, Any] | None:
    """`ssh -G -F config alias` itself: the FIELDS (files expanded), or None when ssh refuses."""
    r = subprocess.run(
        [program, "-G", "-F", str(config), "--", alias],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=10,
    )
    if r.returncode != 0:
        return None
    dump = parse_dump(r.stdout)
    entry = pwd.getpwuid(os.getuid())
    first = {k: v[0] for k, v in dump.items() if v}
    values = {
        "%": "%",
        "d": entry.pw_dir,
        "u": entry.pw_name,
        "h": first["hostname"],
        "p": first["port"],
        "r": first["user"],
        "n": alias,
        "l": socket.gethostname(),
    }
    out: dict[str, Any] = {k: first[k] for k in ("hostname", "port", "user")}
    out["identityfile"] = [_expand(v, values) for v in dump.get("identityfile", ())]
    out["certificatefile"] = [_expand(v, values) for v in dump.get("certificatefile", ())]
    for key in ("proxyjump", "proxycommand"):
        out[key] = first.get(key)
    return out


def ours_openssh(cfg: OpenSSHConfig, alias: str) -> dict[str, Any] | None:
    """gpuonboard's resolution with `ssh` installed, or None when it refuses the alias."""
    try:
        r = cfg.resolution(alias)
    except InventoryError:
        return None
    out: dict[str, Any] = {k: r.first(k) for k in ("hostname", "port", "user", "proxyjump", "proxycommand")}
    out["identityfile"] = list(r.values.get("identityfile", ()))
    out["certificatefile"] = list(r.values.get("certificatefile", ()))
    return out


def connection_view(alias: str, found: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """A lookup() result with OpenSSH's defaults where it sets nothing."""
    out = {k: found.get(k) for k in FIELDS}
    for key, value in defaults.items():
        if out.get(key) in (None, [], "none"):
            out[key] = value
    out["port"] = str(out["port"])
    out["hostname"] = str(out["hostname"] or alias.lower()).lower()
    return out


def compare(corpus: Path = CORPUS) -> tuple[Tally, Tally, list[str]]:
    """(gpuonboard with ssh vs ssh -G, own reader vs ssh -G, the refusal sentences)."""
    program = shutil.which("ssh")
    if program is None:
        raise SystemExit("ssh is not installed: nothing to compare with")
    with_ssh, fallback = Tally(), Tally()
    sentences: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, config, aliases in shapes(corpus, Path(tmp)):
            resolver = OpenSSHConfig(config, program)
            defaults_ids = resolver._default_identities()
            for alias in aliases:
                want = truth(program, config, alias)
                got = ours_openssh(resolver, alias)
                if got == want:
                    with_ssh.agree += 1
                else:
                    with_ssh.differ.append(f"{name} {alias}: ssh -G {want} / gpuonboard {got}")
                _fallback(name, config, alias, want, defaults_ids, fallback, sentences)
    return with_ssh, fallback, sentences


def _fallback(
    name: str,
    config: Path,
    alias: str,
    want: dict[str, Any] | None,
    default_ids: tuple[str, ...],
    tally: Tally,
    sentences: list[str],
) -> None:
    """The own reader's view of `alias` against ssh -G's (`want`), counted into `tally`."""
    entry = pwd.getpwuid(os.getuid())
    home = entry.pw_dir
    try:
        cfg = UserSSHConfig.from_text_at(config.read_text(), config)
        found = followable(alias, cfg.lookup(alias), cfg)
    except (InventoryError, Exception) as exc:  # noqa: BLE001 (paramiko's own errors count too)
        sentences.append(str(exc))
        tally.refused += 1
        return
    if want is None:
        tally.differ.append(f"{name} {alias}: ssh -G refuses it, the own reader read {found}")
        return
    ids = [p.replace("~", home, 1) if p.startswith("~") else p for p in default_ids]
    got = connection_view(alias, found, {"port": "22", "user": entry.pw_name, "identityfile": ids})
    if "proxyjump" in found and "proxycommand" not in found and want.get("proxycommand"):
        want = {**want, "proxyjump": found["proxyjump"], "proxycommand": None}  # (ssh -W as a jump)
    got["certificatefile"] = got["certificatefile"] or []
    if got == want:
        tally.agree += 1
    else:
        tally.differ.append(f"{name} {alias}: ssh -G {want} / own reader {got}")


def main() -> int:
    corpus = Path(sys.argv[1]) if len(sys.argv) > 1 else CORPUS
    with_ssh, fallback, _ = compare(corpus)
    print(f"{with_ssh.agree}/{with_ssh.total} aliases agree with ssh -G (gpuonboard with ssh installed)")
    print(
        f"own reader (no ssh on PATH): {fallback.agree} agree, {fallback.refused} refused in one"
        f" sentence, {len(fallback.differ)} differ, of {fallback.total}"
    )
    for line in with_ssh.differ + fallback.differ:
        print("  differs:", line)
    return 1 if with_ssh.differ or fallback.differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
