"""One rule turns a yes/no setting into a bool (steps.base.truthy): true/yes/on/1 and True;
false/no/off/0, "" and False/None; anything else is an error naming the setting. Before it,
six helpers had four rules: `encrypt: off` encrypted, `force: off` did not force."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuonboard.api.monitor import Thresholds
from gpuonboard.errors import UsageError
from gpuonboard.inventory import load
from gpuonboard.steps import REGISTRY
from gpuonboard.steps.base import StepArgsError, truthy


@pytest.mark.parametrize("value", [True, "true", "TRUE", " yes ", "On", "1", 1])
def test_true_words(value: Any) -> None:
    assert truthy(value, "force") is True


@pytest.mark.parametrize("value", [False, None, "false", "No", " OFF ", "0", 0, "", "  "])
def test_false_words(value: Any) -> None:
    assert truthy(value, "force") is False


@pytest.mark.parametrize("value", ["maybe", "always", "y", "2", 2, 1.5, [], ["yes"]])
def test_anything_else_is_an_error_naming_the_setting(value: Any) -> None:
    with pytest.raises(StepArgsError) as exc:
        truthy(value, "encrypt")
    assert str(exc.value) == f"argument 'encrypt' must be true or false, not {value!r}"


def _dataset(**args: Any) -> Any:
    return REGISTRY["dataset"]({"source": "/tmp/x", "dest": "/data", **args}, "dataset")


@pytest.mark.parametrize("off", ["off", "OFF", "no", "0", False])
def test_off_is_false_for_encrypt_and_force(off: Any) -> None:
    """The same word means the same thing for every step argument (`encrypt: off` encrypted)."""
    assert _dataset(encrypt=off).encrypt is False
    assert REGISTRY["teardown_pull"]({"force": off}, "pull").force is False
    assert REGISTRY["teardown_files"]({"force": off}, "files").force is False
    assert REGISTRY["autostop"]({"force": off}, "autostop").settings.force is False


@pytest.mark.parametrize("on", ["on", "yes", "1", True])
def test_on_is_true_for_encrypt_and_force(on: Any) -> None:
    assert _dataset(encrypt=on).encrypt is True
    assert REGISTRY["teardown_pull"]({"force": on}, "pull").force is True
    assert REGISTRY["autostop"]({"force": on}, "autostop").settings.force is True


@pytest.mark.parametrize(
    ("kind", "args"),
    [
        ("dataset", {"source": "/tmp/x", "dest": "/data", "encrypt": "maybe"}),
        ("teardown_pull", {"force": "maybe"}),
        ("teardown_containers", {"keep_image": "maybe"}),
        ("template", {"src": "a.j2", "dest": "/etc/a", "follow": "maybe"}),
    ],
)
def test_a_word_outside_the_rule_is_refused_at_load(kind: str, args: dict[str, Any]) -> None:
    """(`encrypt: maybe` encrypted; `force: maybe` did not force: both guessed.)"""
    with pytest.raises(StepArgsError, match="must be true or false, not 'maybe'"):
        REGISTRY[kind](args, kind)


def test_host_variable_expect_busy_follows_the_rule(tmp_path: Path) -> None:
    """`vars.expect_busy` of `monitor`: off is false, a word outside the rule is a usage error
    naming the host (it counted as false)."""
    hosts = tmp_path / "hosts.yml"
    hosts.write_text(
        "hosts:\n"
        "  a: {address: 127.0.0.1, vars: {expect_busy: 'off'}}\n"
        "  b: {address: 127.0.0.1, vars: {expect_busy: 'on'}}\n"
        "  c: {address: 127.0.0.1, vars: {expect_busy: 'sometimes'}}\n"
    )
    inv = load(hosts)
    assert Thresholds.for_host(inv.hosts["a"]).expect_busy is False
    assert Thresholds.for_host(inv.hosts["b"]).expect_busy is True
    with pytest.raises(UsageError) as exc:
        Thresholds.for_host(inv.hosts["c"])
    assert str(exc.value) == "host c: vars.expect_busy must be true or false, not 'sometimes'."


@pytest.mark.parametrize(("word", "kept"), [("off", False), ("no", False), ("on", True)])
def test_teardown_keep_image_word_reaches_the_step(tmp_path: Path, word: str, kept: bool) -> None:
    """`invoke teardown` without --keep-image left `keep_image: off` as bool("off"): kept."""
    from gpuonboard import api
    from gpuonboard.api.teardown import TeardownOptions, build_playbook
    from gpuonboard.runner.playbook import Playbook, StepSpec

    spec = StepSpec("teardown_containers", "containers", {"keep_image": word}, None)
    book = Playbook(tmp_path / "teardown.yml", "teardown", (spec,))
    built = build_playbook(book, TeardownOptions(), api.Settings(project=tmp_path), tmp_path / "hosts.yml")
    (step_spec,) = built.steps
    assert REGISTRY["teardown_containers"](step_spec.args, "containers").keep_image is kept
    forced = build_playbook(
        book, TeardownOptions(keep_image=True), api.Settings(project=tmp_path), tmp_path / "hosts.yml"
    )
    assert REGISTRY["teardown_containers"](forced.steps[0].args, "containers").keep_image is True
