"""Step `container` QA: the registry credentials file never puts a password into an error
message (PyYAML quotes the text it stopped at), and a password YAML reads as a number, a
true/false value or a date is refused instead of being sent as another string."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard import masking
from gpuonboard.steps.container import ContainerStep, read_credentials_file

SECRET = "Secr3tPW9"


def _read(tmp_path: Path, password: str) -> object:
    f = tmp_path / "registries.yml"
    f.write_text(f"nvcr.io:\n  username: $oauthtoken\n  password: {password}\n")
    f.chmod(0o600)
    return read_credentials_file(f, tmp_path, "nvcr.io")


@pytest.mark.parametrize(
    "password", [f"*{SECRET}", f"!{SECRET}", f"!!{SECRET}", f"!a!{SECRET}", f'"{SECRET}']
)
def test_invalid_yaml_never_quotes_the_password(tmp_path: Path, password: str) -> None:
    got = _read(tmp_path, password)
    assert isinstance(got, str), got
    assert SECRET not in got and "Secr3t" not in got
    assert got.startswith(f"registry credentials file {tmp_path / 'registries.yml'}, line ")
    assert "invalid YAML" in got and "password: '...'" in got


@pytest.mark.parametrize(
    ("password", "kind"),
    [
        ("0123", "number"),
        ("3.14", "number"),
        ("12:30", "number"),
        ("yes", "true/false value"),
        ("2024-01-02", "date"),
    ],
)
def test_a_password_yaml_reads_as_no_text_is_refused(tmp_path: Path, password: str, kind: str) -> None:
    got = _read(tmp_path, password)
    assert got == (
        f"registry credentials file {tmp_path / 'registries.yml'}: the password for nvcr.io is read as a"
        f" {kind}, not as text (YAML turns 0123 into 83, yes into true); put it in single quotes:"
        " password: '...'"
    )
    assert password not in str(got).split("(YAML turns")[0]


def test_a_quoted_password_is_read_as_written(tmp_path: Path) -> None:
    got = _read(tmp_path, "'0123'")
    assert isinstance(got, tuple)
    user, password = got
    assert user == "$oauthtoken" and isinstance(password, masking.Secret) and password.reveal() == "0123"
    got = _read(tmp_path, f"'*{SECRET}'")
    assert isinstance(got, tuple) and got[1].reveal() == f"*{SECRET}"


@pytest.mark.parametrize(
    "key", ["harbor.corp:8443", "harbor.corp:8443/nvcr-proxy", "https://Harbor.Corp:8443/nvcr-proxy/"]
)
def test_the_mirror_entry_is_found_as_registry_mirror_names_it(tmp_path: Path, key: str) -> None:
    """The file's key may be the registry_mirror value itself (with its /prefix) or the host:
    docker logs in per host; missing the entry would pull anonymously and fail as unauthorized."""
    f = tmp_path / "registries.yml"
    f.write_text(f"'{key}':\n  username: robot\n  password: '{SECRET}'\n")
    f.chmod(0o600)
    s = ContainerStep({}).settings(
        {"registry_mirror": "https://harbor.corp:8443/nvcr-proxy", "registry_credentials_file": str(f)}, None
    )
    assert s.login_registry == "harbor.corp:8443"
    got = read_credentials_file(f, tmp_path, s.login_registry)
    assert isinstance(got, tuple) and got[0] == "robot" and got[1].reveal() == SECRET
    # another host's entry is never used for this mirror
    assert read_credentials_file(f, tmp_path, "harbor.corp:9443") is None
