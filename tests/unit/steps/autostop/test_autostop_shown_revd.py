"""Review revD's findings on the shown-command rule and the `--status` scrub: a secret joined
to other text (URL-encoded, JSON-escaped, `token_...`) is masked in `--status` all the same (a
literal replacement, anywhere); lower-case words with digits in one run (`hunter123`) and
`--name=VALUE` values of that shape are masked; `-a`/`-k` take a secret value (`redis-cli -a`,
`openssl -k`); `-P`/`-p` hide only a value attached to them (`shutdown -P now` stays shown);
a URL's userinfo and a query's values are always scrubbed."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gpuonboard.masking import MASK, command_secrets, command_shown
from gpuonboard.steps.autostop import install
from gpuonboard.steps.autostop.step import status_command

from .box import T0, Box

SLACK = 'curl -fsS "https://hooks.slack.com/services/T0123ABC/B0456DEF/xyzSecretTok123"'


def _status(tmp_path: Path, before: str, log: str) -> str:
    box = Box(tmp_path, idle="30m", billing_aware="no", before_shutdown=before)
    box.run(T0)
    (box.dir / "autostop.log").open("a").write(log)
    cmd = status_command(str(box.dir), str(tmp_path / "crond"), "crontab", 15)
    return subprocess.run(["sh", "-c", cmd], env=box.env(T0 + 60), capture_output=True, text=True).stdout


def test_the_status_scrub_masks_a_secret_joined_to_other_text(tmp_path: Path) -> None:
    log = (
        "1800000010 notify: POST url=https%3A%2F%2Fhooks.slack.com%2Fservices%2FT0123ABC%2FB0456DEF"
        "%2FxyzSecretTok123\n"
        '1800000011 {"text":"stopping","hook":"T0123ABC\\nxyzSecretTok123"}\n'
        "1800000012 token_xyzSecretTok123 sent\n"
    )
    out = _status(tmp_path, SLACK, log)
    for secret in ("T0123ABC", "B0456DEF", "xyzSecretTok123"):
        assert secret not in out, out
    assert "sent" in out and "stopping" in out, out


def test_the_status_scrub_masks_url_userinfo_and_query_values(tmp_path: Path) -> None:
    log = (
        "1800000010 fatal: unable to access 'https://admin:correcthorse@example.com': auth failed\n"
        "1800000011 GET /hook?key=abcdefghijkl&x=1 -> 403\n"
    )
    out = _status(
        tmp_path,
        'curl -fsS https://admin:correcthorse@example.com/hook; curl -fsS "https://example.com/hook?key=abcdefghijkl"',
        log,
    )
    assert "correcthorse" not in out and "abcdefghijkl" not in out, out
    assert "auth failed" in out and "403" in out, out


@pytest.mark.parametrize(
    ("command", "secret"),
    [
        ("redis-cli -a hunter123 save", "hunter123"),
        ("redis-cli -a hunter save", "hunter"),
        ("redis-cli -a my-pass.2024 save", "my-pass.2024"),
        ("openssl enc -aes-256-cbc -k hunter123 -in /data/x -out /data/x.enc", "hunter123"),
        ("openssl enc -aes-256-cbc -k hunter -in /data/x", "hunter"),
        ("curl --data=hunter123 https://x", "hunter123"),
        ("notify hunter.secret.value42", "hunter.secret.value42"),
        ("curl -sS https://api.example.com/stop/hunter123", "hunter123"),
        ("sshpass -phunter123 ssh host poweroff", "hunter123"),
    ],
)
def test_lower_case_secrets_with_digits_and_secret_flag_values_are_masked(command: str, secret: str) -> None:
    shown = command_shown(command)
    assert secret not in shown, shown
    assert any(secret in w for w in command_secrets(command)), command_secrets(command)


@pytest.mark.parametrize(
    "command",
    [
        "sudo -n shutdown -P now",
        "sudo -n shutdown -p now",
        "ssh -p 2222 bastion poweroff",
        "az vm deallocate -g my-rg -n gpu-vm-01",
        "docker stop trainer_1",
        "aws ec2 stop-instances --instance-ids $INSTANCE_ID",
        "rsync -a ~/ckpt/ /backup/ckpt/",
    ],
)
def test_plain_commands_stay_shown(command: str) -> None:
    assert command_shown(command) == command


def test_the_sudo_check_names_no_masked_word_and_keeps_plain_commands() -> None:
    assert install.sudo_check("sudo -n redis-cli -a hunter123 shutdown") == ["sudo", "-n", "true"]
    assert install.sudo_check("sudo -n redis-cli -a hunter shutdown") == ["sudo", "-n", "true"]
    assert install.sudo_check("sudo -n shutdown -P now") == ["sudo", "-n", "-l", "shutdown", "-P", "now"]


def test_an_attached_p_value_is_still_masked() -> None:
    shown = command_shown("mysqldump -uroot -pS3cret train")
    assert "S3cret" not in shown and MASK in shown, shown
