"""masking.command_shown's rule, as the watcher's status/log and our messages show a command:
a word is shown only when it is clearly not a secret (a bare `-x`/`-xyz` lower-case flag or a
`--name`, `--name=plainvalue`, a lower-case name with digits, `-`, `_` or `.`, a number, a
local path whose parts look like names), shell operators as they are, and a quoted `sh -c`
script word by word under the same rule. A secret flag's value, attached (`-pS3cret`) or next
(`zip -P pw`), is masked, as is a path part that looks random (a webhook's token); the
`--status` scrub (MASK_WORDS) replaces those words only, wherever they stand."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gpuonboard.masking import MASK, command_secrets, command_shown
from gpuonboard.steps.autostop import install
from gpuonboard.steps.autostop.step import status_command

from .box import T0, Box


@pytest.mark.parametrize(
    "command",
    [
        "az login --identity && az vm deallocate -g my-rg -n gpu-vm-01",
        "aws ec2 stop-instances --instance-ids $INSTANCE_ID",
        "gcloud compute instances stop trainer --format=json",
        "sudo -n systemctl stop train.service",
        "docker stop trainer_1",
        "rsync -a ~/ckpt/ /backup/ckpt/ || true",
        "sudo -n shutdown -h now; sync",
        "sh -c 'shutdown -h now'",
        "sh -c 'sync; shutdown -h now'",
        "kill -TERM 1234567",
        "/opt/bin/save.sh > /tmp/save.log",
    ],
)
def test_words_that_are_clearly_not_secret_are_shown(command: str) -> None:
    assert command_shown(command) == command
    assert command_secrets(command) == []


@pytest.mark.parametrize(
    ("command", "secret", "kept"),
    [
        (
            "mysqldump -uroot -pS3cretPassw0rd train > /backup/db.sql",
            "S3cretPassw0rd",
            "train > /backup/db.sql",
        ),
        ("7z a -pTopSecret42 /backup/ckpt.7z /ckpt", "TopSecret42", "/backup/ckpt.7z /ckpt"),
        ("mysqldump -psecretpw train", "secretpw", "train"),
        ("zip -P correcthorse /backup/ckpt.zip /ckpt", "correcthorse", "/backup/ckpt.zip /ckpt"),
        ("sudo -n /opt/vendor/stop-vm -kAKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE", "/opt/vendor/stop-vm"),
        ("/opt/bin/notify /hooks/T0123ABC/XyZsecretTokenValue", "XyZsecretTokenValue", "/opt/bin/notify"),
        ("/opt/bin/notify /hooks/a3f9c2e1d4b5a6f70b1c", "a3f9c2e1d4b5a6f70b1c", "/opt/bin/notify"),
        (
            "sh -c 'curl -d token=Zk93xQabc https://x.invalid; shutdown -h now'",
            "Zk93xQabc",
            "shutdown -h now",
        ),
    ],
)
def test_secret_words_are_masked_and_only_they(command: str, secret: str, kept: str) -> None:
    shown = command_shown(command)
    assert secret not in shown, shown
    assert kept in shown, shown
    assert any(secret in w for w in command_secrets(command)), command_secrets(command)
    assert MASK in shown and "[sha256:" in shown


def test_the_sudo_check_never_names_an_attached_secret() -> None:
    check = install.sudo_check("sudo -n /opt/vendor/stop-vm -pS3cretPassw0rd")
    assert check is not None and not any("S3cret" in w for w in check), check
    # the -u part is kept where the command itself is not named
    assert install.sudo_check("sudo -u ops /opt/vendor/stop-vm --token Zk93xQ") == [
        "sudo",
        "-n",
        "-u",
        "ops",
        "true",
    ]


def test_the_status_scrub_leaves_the_watchers_own_words(tmp_path: Path) -> None:
    """A shutdown command of plain words (`shutdown`) and one secret: `--status` masks the
    secret wherever it appears as a whole word, never `shutdown` in the watcher's own text."""
    box = Box(tmp_path, idle="30m", billing_aware="no", shutdown_command="sh -c 'sync; shutdown -h now'")
    (box.bin / "shutdown").write_text(
        "#!/bin/sh\necho 'shutdown: Failed to talk to init daemon' >&2; exit 1\n"
    )
    (box.bin / "shutdown").chmod(0o755)
    for t in (0, 1800, 2100, 2160):
        box.run(T0 + t)
    cmd = status_command(str(box.dir), str(tmp_path / "crond"), "crontab", 15)
    out = subprocess.run(["sh", "-c", cmd], env=box.env(T0 + 2170), capture_output=True, text=True).stdout
    assert MASK not in out, out
    assert "sh -c 'sync; shutdown -h now'" in out and "before_shutdown" in out, out


def test_the_status_scrub_replaces_a_secret_wherever_it_stands(tmp_path: Path) -> None:
    """A secret that is part of a longer word of the watcher's text (`shut` of `shutdown`) is
    masked there too (a literal replacement: when in doubt, mask)."""
    box = Box(tmp_path, idle="30m", billing_aware="no", shutdown_command="sh -c 'exit 1' --password shut")
    for t in (0, 1800, 2100, 2160):
        box.run(T0 + t)
    (box.dir / "autostop.log").open("a").write("1800002170 old line: --password shut\n")
    cmd = status_command(str(box.dir), str(tmp_path / "crond"), "crontab", 15)
    out = subprocess.run(["sh", "-c", cmd], env=box.env(T0 + 2170), capture_output=True, text=True).stdout
    assert "old line: --password ********" in out, out
    assert "shut" not in out and "before_********down" in out, out
