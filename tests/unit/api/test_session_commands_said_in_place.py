"""A pasted session's command quoted in a note or a rule's actual (masking.command_said) has its
secret values masked where they stand, in their own word only, by the rules command_shown masks
by (one mechanism: PASSWORD_OPTIONS, a secret-named option's or variable's value, a header's
value, `-p`'s value given apart, a URL's userinfo password).

Before (review revJ F2, F3): each password found was replaced wherever its letters stood in the
whole line (`sshpass -p a ssh box nvidia-smi` -> `sshp********ss -p ******** ssh box
nvidi********-smi`, `curl -u admin:1 http://10.0.0.1/x` mangled the URL), a bare `mysql -p gpu`
(a prompt, then the database) masked the database, and `docker exec -e HF_TOKEN=T`, `docker login
-u me -p T` and `curl -H "Authorization: Bearer T"` were quoted with their token in notes and in
every GPU rule's actual.

The sessions are constructed (the commands a user types are the case); the nvidia-smi table
after them is the real one of tests/fixtures/real (SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.masking import MASK, command_said

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
TABLE = (REAL / "nvidia-smi__a100-sxm4-40gb__1gpu__driver550.144.03.txt").read_text()
M = MASK

SAID = [
    ("sshpass -p a ssh box nvidia-smi", f"sshpass -p {M} ssh box nvidia-smi"),
    ("curl -u admin:1 http://10.0.0.1/x", f"curl -u admin:{M} http://10.0.0.1/x"),
    ("curl -u ad1min:1 http://10.0.0.1/x", f"curl -u ad1min:{M} http://10.0.0.1/x"),
    # mysql's, mariadb's and 7z's bare -p prompts: the next word is a database or an archive
    ("mysql -u root -p gpu", "mysql -u root -p gpu"),
    ("mariadb -p gpu", "mariadb -p gpu"),
    ("7z a -p backup.7z ckpt/", "7z a -p backup.7z ckpt/"),
    ("mysql -u root -pS3cretPWh gpu", f"mysql -u root -p{M} gpu"),
    ("7z a -pHunter backup.7z ckpt/", f"7z a -p{M} backup.7z ckpt/"),
    # a word starting with `-` is the next option, no value
    ("mongo -u u -p --port 27017", "mongo -u u -p --port 27017"),
    ("mongo -u u -p hunter --port 27017", f"mongo -u u -p {M} --port 27017"),
    # what command_secrets finds: a header's value, NAME=VALUE anywhere, -p apart
    ("docker exec -e HF_TOKEN=S3cretTOKg app nvidia-smi", f"docker exec -e HF_TOKEN={M} app nvidia-smi"),
    ("docker login -u me -p S3cretDLx nvcr.io", f"docker login -u me -p {M} nvcr.io"),
    (
        'curl -H "Authorization: Bearer S3cretTOKf" https://api.example.com/v1/x',
        f'curl -H "Authorization: Bearer {M}" https://api.example.com/v1/x',
    ),
    ('wget --header="X-Api-Key: hunter" u', f'wget --header="X-Api-Key: {M}" u'),
    ('curl "https://h.example/x?token=abc&b=2"', f'curl "https://h.example/x?token={M}&b=2"'),
    ("psql postgres://u:hunter@db/gpu", f"psql postgres://u:{M}@db/gpu"),
    ("redis-cli auth hunter", f"redis-cli auth {M}"),
    ('mysql -p"my pass" gpu', f'mysql -p"{M}" gpu'),
    # the program behind a wrapper or a container engine
    ("sudo -u alice mysql -phunter gpu", f"sudo -u alice mysql -p{M} gpu"),
    ("docker exec app mysql -uroot -phunter gpu", f"docker exec app mysql -uroot -p{M} gpu"),
    ("timeout 5 sshpass -p a ssh box nvidia-smi", f"timeout 5 sshpass -p {M} ssh box nvidia-smi"),
]


@pytest.mark.parametrize(("command", "said"), SAID)
def test_a_secret_is_masked_in_its_own_word_only(command: str, said: str) -> None:
    assert command_said(command) == said


@pytest.mark.parametrize(
    "command",
    [
        "sudo -u alice nvidia-smi",
        "docker run --rm --gpus all nvcr.io/nvidia/pytorch:24.01-py3 nvidia-smi",
        'journalctl -k -b -1 --since "2024-05-01 10:00"',
        "kubectl exec -it pod-7f9c8d6b5-xk2lm -- nvidia-smi",
        "ssh -p 2222 root@10.0.0.12 nvidia-smi",
        'curl -H "Accept: application/json" https://api.example.com/v1/x',
        "grep auth /var/log/auth.log",
        "ssh -p2222 gpu01 nvidia-smi",
    ],
)
def test_a_command_without_a_secret_is_quoted_as_typed(command: str) -> None:
    assert command_said(command) == command


@pytest.mark.parametrize(
    ("command", "secret", "said"),
    [  # (review revJ s6, s8, s9: the note's quote of a command this tool does not read)
        (
            'curl -H "Authorization: Bearer S3cretTOKf" https://api.example.com/v1/x',
            "S3cretTOKf",
            f'`curl -H "Authorization: Bearer {M}" https://api.example.com/v1/x`',
        ),
        ("docker login -u me -p S3cretDLx nvcr.io", "S3cretDLx", f"`docker login -u me -p {M} nvcr.io`"),
        ("sshpass -p a ssh box uptime", "", f"`sshpass -p {M} ssh box uptime`"),
        ("curl -u admin:1 http://10.0.0.1/x", "", f"`curl -u admin:{M} http://10.0.0.1/x`"),
    ],
)
def test_a_note_quotes_the_command_with_its_secret_masked(
    tmp_path: Path, command: str, secret: str, said: str
) -> None:
    path = tmp_path / "session.txt"
    path.write_text(f"$ {command}\nok\n$ nvidia-smi\n{TABLE}")
    notes: list[str] = []
    offline.load_outputs([str(path)], notes)
    text = "\n".join(notes)
    assert said in text, text
    assert not secret or secret not in text, text


def test_a_gpu_rule_s_actual_quotes_the_container_s_command_masked(tmp_path: Path) -> None:
    """review revJ s7: `docker exec -e HF_TOKEN=T app nvidia-smi` narrows the GPU rules to the
    container's view; each says so quoting the command, its token masked."""
    session = f"$ docker exec -e HF_TOKEN=S3cretTOKg app nvidia-smi\n{TABLE}"
    got = verdicts(tmp_path, "session.txt", session, "gpu_count: 1\ngpu_model: A100\n")
    quoted = [actual for _, actual in got.values() if "docker exec" in actual]
    assert quoted, got
    for actual in quoted:
        assert "S3cretTOKg" not in actual and f"`docker exec -e HF_TOKEN={M} app nvidia-smi`" in actual, (
            actual
        )


def test_command_shown_reads_a_prompting_p_as_command_said_does() -> None:
    """One mechanism: mysql's bare `-p` prompts in command_shown too (its database shown), and
    an attached value is masked in both."""
    from gpuonboard.masking import command_shown

    assert "-p gpu " in command_shown("mysql -u root -p gpu")
    assert "hunter" not in command_shown("mysql -u root -phunter gpu")
