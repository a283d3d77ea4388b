"""Rebuild src/gpuonboard/data/gpu_pci_ids.yml from NVIDIA/open-gpu-kernel-modules: the README's
"Compatible GPUs" table (product name, PCI device id, subsystem) at every release tag.

The newest release's rows are copied as they stand (what a current driver names each id); a
name an earlier release printed for an id (or an id and subsystem) that the newest does not is
kept too, with `was`: the first and last release that printed it (nvidia-smi on a box with that
driver prints that name: 20B3 "NVIDIA PG506-242" from 515.48.07, "NVIDIA A100-SXM-64GB" now).

    git clone https://github.com/NVIDIA/open-gpu-kernel-modules  # (or a bare mirror)
    python scripts/gpu_pci_ids.py PATH_TO_ITS_GIT_DIR > src/gpuonboard/data/gpu_pci_ids.yml
    python scripts/data_tables.py  # its compiled copy (data/compiled/gpu_pci_ids.json)
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROW = re.compile(r"^\|\s*(.+?)\s*\|\s*([0-9A-F]{4})(?:\s+([0-9A-F]{4})\s+([0-9A-F]{4}))?\s*\|\s*$")
HEAD = Path(__file__).parents[1] / "src/gpuonboard/data/gpu_pci_ids.yml"

Key = tuple[str, str | None, str]  # (id, subsystem or None, name)


def _git(repo: str, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", repo, *args], check=True, capture_output=True, text=True
    ).stdout


def _release(tag: str) -> tuple[int, ...] | None:
    return tuple(int(p) for p in tag.split(".")) if re.fullmatch(r"\d+(\.\d+)+", tag) else None


def rows_at(repo: str, tag: str) -> list[Key]:
    """The table's rows in the README at `tag`, in order ([] where it has none)."""
    try:
        text = _git(repo, "show", f"{tag}:README.md")
    except subprocess.CalledProcessError:
        return []
    found: list[Key] = []
    for line in text.splitlines():
        m = ROW.match(line)
        if m:
            found.append((m[2], f"{m[3]} {m[4]}" if m[3] else None, m[1]))
    return found


def _row(key: Key, was: str | None = None) -> str:
    device, sub, name = key
    parts = [f'id: "{device}"'] + ([f'sub: "{sub}"'] if sub else []) + [f'name: "{name}"']
    parts += [f'was: "{was}"'] if was else []
    return "  - {" + ", ".join(parts) + "}"


def build(repo: str) -> str:
    tags = sorted((t for t in _git(repo, "tag").split() if _release(t)), key=_release)  # type: ignore[arg-type,return-value]
    seen: dict[Key, list[str]] = {}
    latest: list[Key] = []
    for tag in tags:
        rows = rows_at(repo, tag)
        if rows:
            latest, newest = rows, tag
            for key in dict.fromkeys(rows):
                seen.setdefault(key, []).append(tag)
    commit = _git(repo, "rev-list", "-n1", newest).strip()
    current = set(latest)
    former = sorted((k for k in seen if k not in current), key=lambda k: (k[0], k[1] or "", k[2]))
    head = HEAD.read_text().split("\nsource:", 1)[0]
    lines = [head, f'source: "NVIDIA/open-gpu-kernel-modules README.md @ {commit} ({newest})"', "ids:"]
    lines += [_row(k) for k in dict.fromkeys(latest)]
    for k in former:
        first, last = seen[k][0], seen[k][-1]
        lines.append(_row(k, first if first == last else f"{first} to {last}"))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(build(sys.argv[1]))
