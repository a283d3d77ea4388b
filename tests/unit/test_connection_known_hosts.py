"""Our known_hosts reader keeps paramiko's HostKeys answers (issue 28: it holds paramiko's public
HostKeyEntry in a list of its own instead of appending to HostKeys' private entry list): for
every name, the same key per type (the first line of a type wins, a repeated line is dropped,
hashed names match), before and after a key is recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import paramiko
import pytest

from gpuonboard.connection import KnownHosts


@pytest.fixture(scope="module")
def keys() -> dict[str, Any]:
    return {
        "ec1": paramiko.ECDSAKey.generate(),
        "ec2": paramiko.ECDSAKey.generate(),
        "rsa": paramiko.RSAKey.generate(1024),
    }


def _line(names: str, key: Any) -> str:
    return f"{names} {key.get_name()} {key.get_base64()}"


def _paramiko_view(path: Path, name: str) -> dict[str, bytes]:
    """What paramiko's own HostKeys (public API) answers for `name`: key blob by type."""
    found = paramiko.HostKeys(str(path)).lookup(name)
    if found is None:
        return {}
    return {t: found[t].asbytes() for t in set(found.keys())}


def _our_view(store: KnownHosts, name: str) -> dict[str, bytes]:
    return {t: k.asbytes() for t, k in store.lookup(name).items()}


NAMES = ["a.example", "b.example", "[c.example]:2222", "d.example", "e.example", "10.0.0.1"]


def test_lookups_match_paramikos_hostkeys(tmp_path: Path, keys: dict[str, Any]) -> None:
    hashed_d = paramiko.HostKeys.hash_host("d.example")
    path = tmp_path / "known_hosts"
    path.write_text(
        "\n".join(
            [
                "# a comment",
                _line("a.example", keys["ec1"]),
                _line("a.example", keys["ec2"]),  # a second key of the type: the first wins
                _line("b.example,[c.example]:2222", keys["rsa"]),
                _line("a.example,b.example", keys["ec1"]),  # a.example's copy is dropped
                _line(hashed_d, keys["ec2"]),
                _line("d.example", keys["ec1"]),  # after the hashed line: it loses
                "",
            ]
        )
    )
    store = KnownHosts(path)
    for name in NAMES:
        assert _our_view(store, name) == _paramiko_view(path, name), name
    assert _our_view(store, "d.example") == {"ecdsa-sha2-nistp256": keys["ec2"].asbytes()}


def test_a_recorded_key_is_found_at_once_and_by_the_next_run(tmp_path: Path, keys: dict[str, Any]) -> None:
    path = tmp_path / "known_hosts"
    path.write_text(_line("a.example", keys["ec1"]))  # no final newline: the store adds one
    store = KnownHosts(path)
    store.add("a.example", keys["rsa"])
    store.add("[e.example]:2222", keys["ec2"])
    again = KnownHosts(path)
    for name in [*NAMES, "[e.example]:2222"]:
        assert _our_view(store, name) == _our_view(again, name) == _paramiko_view(path, name), name
    assert set(store.lookup("a.example")) == {"ecdsa-sha2-nistp256", "ssh-rsa"}
