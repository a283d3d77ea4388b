"""The watcher never writes a token held in `--before-shutdown` or the shutdown command to its
log or `status`: it shows each command as masking.command_shown wrote it to the config (the
program, flags, local paths and plain words; every other word masked, and a digest). Before,
`status` printed both commands in clear and the log did at each decision (`run before_shutdown
(...): curl -H "Authorization: Bearer T" ...`, `shutdown: ...; running: CMD`), and `invoke
autostop --status` carried them into this machine's terminal and reports."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gpuonboard.masking import MASK, command_shown
from gpuonboard.steps.autostop.step import status_command

from .box import T0, Box

TOKEN = "tok-8f2c61d0a9b34e75"
HOOK = "https://hooks.example.invalid/services/T0/B0/XKEYxkey0123"


def test_the_log_and_status_show_the_commands_masked(tmp_path: Path) -> None:
    before = f"curl -fsS -H 'Authorization: Bearer {TOKEN}' {HOOK} || true"
    marker = tmp_path / "shutdown-ran"
    box = Box(
        tmp_path,
        idle="1m",
        grace="1m",
        before_shutdown=before,
        shutdown_command=f"API_KEY={TOKEN} touch {marker}",
    )
    status = box.run(T0, "status").stdout
    box.ticks(T0, 4)
    assert box.shut_down
    log = box.log()
    for text in (status, log, box.run(T0 + 300, "status").stdout):
        assert TOKEN not in text and "XKEYxkey0123" not in text, text
    shown = command_shown(before)
    assert f"before_shutdown: {shown} (timeout" in status
    assert shown.startswith(f"curl -fsS -H {MASK} {MASK} || true [sha256:")
    assert f"run before_shutdown (timeout 10m00s): {shown}" in log
    assert f"running: API_KEY={MASK} touch {marker} [sha256:" in log


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        ("shutdown -h now", "shutdown -h now"),
        ("sudo -n shutdown -h now", "sudo -n shutdown -h now"),
        ("runpodctl stop pod $RUNPOD_POD_ID", "runpodctl stop pod $RUNPOD_POD_ID"),
        ("touch /tmp/x/shutdown-ran", "touch /tmp/x/shutdown-ran"),
        ("rclone copy /data/ckpt remote:ckpt", f"rclone copy /data/ckpt {MASK}"),
        ("mycli --password hunter stop", f"mycli --password {MASK} stop"),
        ("mycli --password=hunter stop", f"mycli {MASK} stop"),
        ("curl -u alice:pw https://x.invalid", f"curl -u {MASK} {MASK}"),
        ("curl -H 'X-Api-Key: k' x", f"curl -H {MASK} x"),
        (
            "az login --identity && az vm deallocate -g RG -n VM",
            f"az login --identity && az vm deallocate -g {MASK} -n {MASK}",
        ),
        ("echo 'unclosed secret", f"echo {MASK}"),
        ("LANG=C.UTF-8 sudo -n LANG=C shutdown -h +1", "LANG=C.UTF-8 sudo -n LANG=C shutdown -h +1"),
        ("X=sk-live-abc stop", f"X={MASK} stop"),
        ("timeout -k 10 30 curl -fsS --api-key k x", f"timeout -k 10 30 curl -fsS --api-key {MASK} x"),
    ],
)
def test_only_words_that_cannot_be_a_secret_are_shown(command: str, shown: str) -> None:
    got = command_shown(command)
    if shown == command:
        assert got == command
    else:
        assert got.startswith(shown + " [sha256:") and len(got) == len(shown) + len(" [sha256:12345678]"), got


def test_status_scrubs_what_the_commands_printed_and_older_log_lines(tmp_path: Path) -> None:
    """What `invoke autostop --status` brings to this machine (the watcher's status, whose
    OVERDUE line quotes the failed shutdown command's last words, and the last log lines, where
    before_shutdown's own output goes and where an older watcher showed the commands in clear)
    holds no word of the commands that may be a secret: each is the mask."""
    key = "key-5be0c2d94a7f13e8"
    before = f"echo 'uploading with Authorization: Bearer {TOKEN}'"
    stop = f"API_KEY={key} sh -c 'echo \"denied for $API_KEY\" >&2; exit 1'"
    box = Box(tmp_path, idle="1m", grace="1m", before_shutdown=before, shutdown_command=stop)
    box.ticks(T0, 4)
    assert not box.shut_down
    log = box.log()
    # the commands' own output reaches the log scrubbed as it is written (review safety32:
    # before, the 0600 log on the host's disk held it in clear)
    assert TOKEN not in log and key not in log and "denied for ********" in log, log
    # a line an older watcher wrote, showing a command in clear
    with (box.dir / "autostop.log").open("a") as f:
        f.write(f"1800000300 2027-01-15T08:05:00Z run before_shutdown (timeout 10m00s): {before}\n")
    script = status_command(str(box.dir), str(tmp_path / "cron.d"), "cron.d", 20)
    shown = subprocess.run(
        ["sh", "-c", script], env=box.env(T0 + 240), capture_output=True, text=True, timeout=30, check=True
    ).stdout
    assert "would act: OVERDUE" in shown and "denied for ********" in shown, shown
    assert "\n  ********\n" in shown, shown  # (before_shutdown's output: its one masked word)
    assert "Z run before_shutdown (timeout 10m00s): echo '********'\n" in shown, shown  # (the older line)
    assert TOKEN not in shown and key not in shown, shown
