"""One saved file judged as `invoke facts FILE --order ORDER` judges it, for the tests that
compare a real capture with its cut or pasted copy."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts


def verdicts(tmp_path: Path, name: str, text: str, order: str | None = None) -> dict[str, tuple[str, str]]:
    """rule -> (verdict, actual) of `text` saved under its own `name` (in a folder of its own,
    so one test may judge several copies), with the order given as YAML text, if any."""
    folder = tmp_path / f"d{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    (folder / name).write_text(text, encoding="utf-8")
    facts = parse_facts(offline.load_outputs([str(folder / name)]))
    spec = None
    if order:
        (folder / "order.yml").write_text(order.rstrip("\n") + "\n")
        spec = offline.load_order(str(folder / "order.yml"))
    return {c.name: (c.verdict, c.actual) for c in offline.judge(facts, spec)}
