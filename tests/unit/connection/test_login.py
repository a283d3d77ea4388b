"""login.fabric_classes: fabric's Connection and Config with Invoke's attribute lookups made
cheaply decide as Invoke's own: where each attribute set lands (the instance or the config),
the config's levels after a login's construction, and the answers to missing names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import fabric
import pytest
from invoke.config import DataProxy

from gpuonboard.connection.hostkeys import HostKeyPolicy, KnownHosts
from gpuonboard.connection.login import fabric_classes, hop_connection
from gpuonboard.inventory import Host


def _pair(**kwargs: Any) -> tuple[Any, Any]:
    """(fabric's Connection, ours) made with the same arguments, as hop_connection makes one."""
    ours_conn, ours_config = fabric_classes()
    made = []
    for connection, config in ((fabric.Connection, fabric.Config), (ours_conn, ours_config)):
        made.append(
            connection(
                "127.0.0.1",
                user="root",
                port=2222,
                config=config(lazy=True, overrides={"load_ssh_configs": False}),
                connect_timeout=5,
                connect_kwargs=dict(kwargs),
            )
        )
    return made[0], made[1]


def _levels(conn: Any) -> list[Any]:
    config = conn.config
    return [config._defaults, config._overrides, config._modifications, config._deletions, config._config]


def test_a_connection_is_built_as_fabrics() -> None:
    theirs, ours = _pair(key_filename=["/nonexistent"], allow_agent=False)
    assert isinstance(ours, fabric.Connection) and isinstance(ours.config, fabric.Config)
    assert sorted(vars(ours)) == sorted(vars(theirs))
    assert _levels(ours) == _levels(theirs)
    assert (ours.host, ours.user, ours.port, ours.connect_kwargs) == (
        theirs.host,
        theirs.user,
        theirs.port,
        theirs.connect_kwargs,
    )
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize(
    "key",
    # fabric's own attributes (set on each login), a method's name, names only the instance
    # holds, config keys (leaves: a dict's key takes no string), and a name neither knows
    [
        "host",
        "transport",
        "client",
        "gateway",
        "run",
        "_sftp",
        "command_prefixes",
        "load_ssh_configs",
        "ssh_config_path",
        "mine",
    ],
)
def test_each_attribute_set_lands_where_invokes_decision_puts_it(key: str) -> None:
    theirs, ours = _pair()
    for conn in (theirs, ours):
        real = key in dir(conn)  # (Invoke's own test)
        conn.__setattr__(key, "value")
        assert (vars(conn).get(key) == "value") is real
        assert (conn.config._config.get(key) == "value") is (not real)
    assert sorted(vars(ours)) == sorted(vars(theirs))
    assert _levels(ours) == _levels(theirs)


def test_a_missing_name_is_missing_as_in_invoke() -> None:
    theirs, ours = _pair()
    for conn in (theirs, ours):
        assert not hasattr(conn, "_root") and not hasattr(conn, "_modify")
        assert getattr(conn.config, "_keypath", ()) == () and not hasattr(conn.config, "_root")
        with pytest.raises(AttributeError, match="No attribute or config key found for 'nothing_here'"):
            _ = conn.nothing_here
        with pytest.raises(AttributeError, match="No attribute or config key found for 'nothing_here'"):
            _ = conn.config.nothing_here
    # a nested config section is Invoke's DataProxy, which knows its root
    assert isinstance(ours.config.connect_kwargs, DataProxy)


def test_hop_connection_builds_ours(tmp_path: Path) -> None:
    host = Host("box", "127.0.0.1", port=2222, user="root")
    policy = HostKeyPolicy("box", None, KnownHosts(tmp_path / "known_hosts"), False)
    conn, _problem = hop_connection(host, None, policy)
    assert type(conn) is fabric_classes()[0] and type(conn.config) is fabric_classes()[1]
    assert (conn.host, conn.port, conn.user) == ("127.0.0.1", 2222, "root")
