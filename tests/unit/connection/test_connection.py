"""`connection: local` runs commands as the SSH runner does: a command killed by a signal ends
with the status a shell gives it (128 + N), and a timeout is the same one-sentence error."""

from __future__ import annotations

import pytest

from gpuonboard.connection import LocalRunner
from gpuonboard.errors import CommandError
from gpuonboard.inventory import Host


@pytest.mark.parametrize("streaming", [False, True], ids=["captured", "streaming"])
def test_signals_and_timeouts_read_as_over_ssh(streaming: bool) -> None:
    runner = LocalRunner(Host("box", "127.0.0.1", connection="local"))
    on_output = (lambda chunk: None) if streaming else None
    killed = runner.run("echo before; kill -9 $$", on_output=on_output)
    assert (killed.exit_code, killed.stdout) == (137, "before\n")
    assert runner.run("kill -TERM $$", on_output=on_output).exit_code == 143
    assert runner.run("exit 3", on_output=on_output).exit_code == 3
    with pytest.raises(CommandError, match=r"^host box: a command timed out \(after 1 s\)\.$"):
        runner.run("sleep 5", timeout=1, on_output=on_output)


def test_a_playbook_needing_no_facts_runs_no_probe() -> None:
    """gather(core=False) with no step probes: no command at all (it failed as 'the fact probe
    could not run': an empty probe script prints no end marker)."""
    from gpuonboard.connection.gather import gather

    ran: list[str] = []

    class Recording(LocalRunner):
        def run(self, command: str, *a: object, **kw: object) -> object:  # type: ignore[override]
            ran.append(command)
            return super().run(command)

    facts = gather(Recording(Host("box", "127.0.0.1", connection="local")), core=False)
    assert ran == [] and facts.gpu is None


def test_an_exit_signal_message_is_read_whatever_its_name_holds() -> None:
    """sshd's exit-signal (RFC 4254 6.10) through our channel-request handler: a known name is
    128 + N, anything else (unknown, empty, not UTF-8: a hostile server's) is 255, never an
    exception in paramiko's transport thread; other requests reach paramiko's own handler."""
    import threading

    from paramiko.message import Message

    from gpuonboard.connection import _channel_request

    seen: list[str] = []

    class Chan:
        def __init__(self) -> None:
            self.exit_status = -1
            self.status_event = threading.Event()

    def message(kind: bytes, name: bytes) -> Message:
        m = Message()
        m.add_string(kind)
        m.add_boolean(False)
        m.add_string(name)
        m.add_boolean(False)
        m.add_string(b"")
        m.add_string(b"")
        m.rewind()
        return m

    handler = _channel_request(lambda chan, m: seen.append(m.get_text()))
    for name, status in ((b"KILL", 137), (b"TERM", 143), (b"NOPE", 255), (b"", 255), (b"\xff\xfe", 255)):
        chan = Chan()
        handler(chan, message(b"exit-signal", name))
        assert (chan.exit_status, chan.status_event.is_set()) == (status, True), name
    handler(Chan(), message(b"exit-status", b"x"))
    assert seen == ["exit-status"]  # (the message as it came: paramiko reads it from the start)
