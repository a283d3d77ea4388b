"""For the tests that compare a real capture with its cut or pasted copy: one saved file judged
as `invoke facts FILE --order ORDER` judges it, and a text as a page wrapping it at a width
shows it."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.api import offline
from gpuonboard.connection.gather import Facts, parse_facts
from gpuonboard.steps.base import Check


def verdicts(tmp_path: Path, name: str, text: str, order: str | None = None) -> dict[str, tuple[str, str]]:
    """rule -> (verdict, actual) of `text` saved under its own `name` (in a folder of its own,
    so one test may judge several copies), with the order given as YAML text, if any."""
    return {c.name: (c.verdict, c.actual) for c in checks(tmp_path, name, text, order)}


def details(tmp_path: Path, name: str, text: str, order: str | None = None) -> dict[str, str]:
    """rule -> its detail sentence, judged as `verdicts` judges."""
    return {c.name: c.detail for c in checks(tmp_path, name, text, order)}


def checks(tmp_path: Path, name: str, text: str, order: str | None = None) -> list[Check]:
    """The checks of `text` saved under `name`, judged as `verdicts` judges."""
    folder = tmp_path / f"d{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    (folder / name).write_text(text, encoding="utf-8")
    facts = parse_facts(offline.load_outputs([str(folder / name)]))
    spec = None
    if order:
        (folder / "order.yml").write_text(order.rstrip("\n") + "\n")
        spec = offline.load_order(str(folder / "order.yml"))
    return list(offline.judge(facts, spec))


def column_wrapped(text: str, width: int) -> str:
    """Every line longer than `width` cut into pieces of `width` characters (a terminal's, a
    page's or a chat's soft wrap at one column)."""
    out: list[str] = []
    for line in text.split("\n"):
        out += [line[i : i + width] for i in range(0, len(line), width)] or [""]
    return "\n".join(out)


def judged_box(tmp_path: Path, files: dict[str, str], order: str) -> tuple[Facts, dict[str, Check]]:
    """The facts and checks (by rule) of several saved outputs of one box: `files` (name ->
    text) in one folder, judged as `invoke facts FOLDER --order ORDER` judges them."""
    folder = tmp_path / "box"
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    (tmp_path / "order.yml").write_text(order)
    facts = parse_facts(offline.load_outputs([str(folder)]))
    return facts, {c.name: c for c in offline.judge(facts, offline.load_order(str(tmp_path / "order.yml")))}


def health_row(text: str, rule: str) -> tuple[str, str]:
    """(verdict, actual) of one gpu_health rule over `text` read as the live probe's
    `nvidia-smi -q` output."""
    from gpuonboard.facts.probe import ProbeOutput
    from gpuonboard.steps.checks import gpu_health

    facts = parse_facts({"nvidia_smi": ProbeOutput(text, "", 0)})
    [c] = [c for c in gpu_health.evaluate(facts) if c.name == rule]
    return c.verdict, c.actual
