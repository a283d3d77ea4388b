"""`make test`'s xdist schedule shares the slow integration tests among the workers.

xdist's default scheduler (`--dist load`) hands each worker, first, a chunk of a quarter of its
share of the tests in collection order. tests/integration is collected first (~520 of ~10,150
tests on 2026-12-06): the first worker got all of them in its first chunk and ran them one after
another while the others took the unit tests and then waited idle, so the suite took about as
long as the integration tests alone, one at a time. This runs xdist's own scheduler on a
collection of that shape with the Makefile's options."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from xdist.scheduler.load import LoadScheduling

MAKEFILE = Path(__file__).resolve().parents[2] / "Makefile"


def make_variable(name: str) -> str:
    """A `NAME ?= value` of the Makefile."""
    found = re.search(rf"^{name} \?= ?(.*)$", MAKEFILE.read_text(), re.M)
    assert found, f"the Makefile sets no {name}"
    return found.group(1).strip()


class Worker:
    """What the scheduler drives of a worker: the tests it was sent."""

    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.shutting_down = False
        self.sent: list[int] = []

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent += indices

    def shutdown(self) -> None:
        self.shutting_down = True


def first_batches(options: list[str], workers: int, collection: list[str]) -> list[list[str]]:
    """The tests xdist's `load` scheduler sends each worker first, with these command-line options."""
    assert "--dist" not in options or options[options.index("--dist") + 1] == "load", options
    chunk = int(options[options.index("--maxschedchunk") + 1]) if "--maxschedchunk" in options else None
    values: dict[str, Any] = {"tx": [f"{workers}*popen"], "maxschedchunk": chunk}
    scheduler = LoadScheduling(SimpleNamespace(getvalue=values.get, getoption=values.get))  # type: ignore[arg-type]
    nodes = [Worker(f"gw{i}") for i in range(workers)]
    for node in nodes:
        scheduler.add_node(node)  # type: ignore[arg-type]
        scheduler.add_node_collection(node, collection)  # type: ignore[arg-type]
    scheduler.schedule()
    return [[collection[i] for i in node.sent] for node in nodes]


def test_every_worker_starts_on_integration_tests() -> None:
    lines = MAKEFILE.read_text().splitlines()
    recipe = next(line for line in lines if "/pytest " in line and " tests" in line)
    assert "-n $(TEST_WORKERS) $(TEST_SCHED)" in recipe, recipe
    workers = int(make_variable("TEST_WORKERS"))
    collection = [f"tests/integration/test_{i}" for i in range(520)]
    collection += [f"tests/unit/test_{i}" for i in range(9_640)]
    batches = first_batches(shlex.split(make_variable("TEST_SCHED")), workers, collection)
    assert len(batches) == workers > 1
    for batch in batches:
        assert batch and all(t.startswith("tests/integration/") for t in batch), batch[:3]
