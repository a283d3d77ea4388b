"""Each shared flag is declared once (flags.CommonFlags: type, default, help, the setting it
sets); every Invoke task that takes it gets that default and help, and api.Settings its value."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path
from typing import Any

import pytest

from gpuonboard import api, flags
from gpuonboard.cli import ns
from gpuonboard.flags import OWN, CommonFlags


def _tasks() -> dict[str, Any]:
    names = list(ns.task_names)
    return {n: ns[n] for n in names}


def test_every_task_that_takes_a_shared_flag_has_its_one_default_and_help() -> None:
    seen: dict[str, set[str]] = {}
    for name, task in _tasks().items():
        own = (
            list(inspect.signature(task.body.__wrapped__).parameters)[2:]
            if hasattr(task.body, "__wrapped__")
            else []
        )
        for arg in task.get_arguments():
            key = arg.attr_name or arg.name
            if key in flags.SPECS and key not in own:
                spec = flags.SPECS[key]
                assert arg.default == spec.default, (name, key)
                assert arg.help == flags.help_text(key), (name, key)
                seen.setdefault(key, set()).add(name)
    # the run commands share the whole set
    for run_flag in (*flags.SELECT, *flags.RUN):
        assert {"provision", "check", "container", "sync", "autostop", "teardown", "prove"} <= seen[run_flag]
    assert seen["strict"] == {"provision", "check"} and seen["lang"] == {"provision", "check"}
    assert {"plan", "facts", "report", "keys.new", "inventory"} <= seen["debug"]


def test_help_fills_in_the_declared_default() -> None:
    assert flags.help_text("forks") == "hosts run concurrently (default 20)"
    assert flags.help_text("connect_retries") == "retries on network errors when connecting (default 2)"


def test_the_library_settings_default_to_the_flags_defaults() -> None:
    """api.Settings (what a caller of the api gets without the CLI) and the flags agree."""
    settings = api.Settings()
    for name, spec in flags.SPECS.items():
        target = spec.metadata["setting"]
        if target is not None and not spec.metadata["path"]:
            assert getattr(settings, target) == spec.default, name


def test_settings_from_the_given_values(tmp_path: Path) -> None:
    given = CommonFlags(forks=3, trust_new_hosts=True, reports_dir="out", known_hosts="", strict=True)
    s = flags.settings(given, tmp_path)
    assert (s.forks, s.trust_new_hosts, s.strict, s.project) == (3, True, True, tmp_path)
    assert s.reports_dir == Path("out") and s.known_hosts is None  # (empty: the default place)
    assert flags.settings(CommonFlags(), tmp_path) == api.Settings(project=tmp_path)


def _body(c: Any, given: CommonFlags, image: str = "", check: bool = False) -> None:
    """A command of its own flags image and check."""


def test_signature_places_shared_and_own_flags_as_the_layout_says() -> None:
    sig, helps = flags.signature(_body, (*flags.SELECT, OWN, "debug"))
    assert list(sig.parameters) == ["c", "host", "inventory", "group", "limit", "image", "check", "debug"]
    assert sig.parameters["debug"].default is False and sig.parameters["image"].default == ""
    assert set(helps) == {"host", "inventory", "group", "limit", "debug"}
    given, own = flags.split(_body, {"host": "a", "image": "x", "check": True, "debug": True})
    assert dataclasses.asdict(given)["host"] == "a" and given.debug and own == {"image": "x", "check": True}


def test_a_layout_must_place_every_own_flag_and_name_only_declared_ones() -> None:
    with pytest.raises(TypeError, match="image, check"):
        flags.signature(_body, flags.SELECT)
    with pytest.raises(KeyError):
        flags.signature(_body, ("no_such_flag", OWN))
