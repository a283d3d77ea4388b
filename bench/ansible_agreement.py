"""Print how many inventories of tests/fixtures/ansible/ gpuonboard reads as `ansible-inventory
--list` reads them ("N/M inventories agree"), and each disagreement. Needs ansible-core."""

from __future__ import annotations

import shutil
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from gpuonboard.inventory.ansible_compare import disagreement

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "ansible"


def corpus(root: Path = CORPUS) -> list[Path]:
    """Each corpus inventory: the one file at the top of each directory (beside its vars dirs)."""
    out = []
    for d in sorted(p for p in root.iterdir() if p.is_dir()):
        files = [f for f in d.iterdir() if f.is_file() and f.name != "SOURCES.md"]
        out += files
    return out


def main() -> int:
    exe = shutil.which("ansible-inventory") or str(Path(sys.executable).parent / "ansible-inventory")
    if not Path(exe).exists():
        print("ansible-inventory is not installed (pip install 'ansible-core>=2.16')")
        return 2
    paths = corpus()
    with tempfile.TemporaryDirectory() as tmp:
        empty = Path(tmp) / "ssh_config"
        empty.write_text("")
        with ThreadPoolExecutor(4) as pool:
            found = list(pool.map(lambda p: disagreement(p, empty, exe), paths))
    for path, why in zip(paths, found, strict=True):
        verdict = "agree   " if why is None else "DIFFER  "
        detail = "" if why is None else ": " + why
        print(f"{verdict}{path.relative_to(CORPUS)}{detail}")
    agree = sum(why is None for why in found)
    print(f"{agree}/{len(paths)} inventories agree")
    return 0 if agree == len(paths) else 1


if __name__ == "__main__":
    sys.exit(main())
