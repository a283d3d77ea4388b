"""shell.py: every value reaches a real POSIX shell as literal data; secrets never reach argv or logs."""

from __future__ import annotations

import subprocess

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gpuonboard import shell
from gpuonboard.masking import MASK, Secret, mask
from gpuonboard.shell import join, quote, sh_c, sudo, with_env

# Arbitrary text without NUL (it cannot travel in an argv), biased towards shell metacharacters.
NASTY = st.sampled_from(
    [";", "&", "|", "$", "(", ")", "`", "'", '"', "\\", "\n", " ", "\t", "*", "?", "~", "#", "!", "{", "}"]
)
CHARS = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
TEXT = st.one_of(
    st.text(CHARS),
    st.lists(st.one_of(NASTY, st.text(CHARS, max_size=3)), max_size=12).map("".join),
)


def run_sh(command: str) -> bytes:
    """Run a built command with the real /bin/sh and return its stdout."""
    return subprocess.run(["/bin/sh", "-c", command], capture_output=True, check=True, timeout=10).stdout


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TEXT)
@example("; rm -rf /")
@example("$(touch /tmp/gpuonboard-pwned)")
@example("`id`")
@example('it\'s "quoted"')
@example("line one\nline two\n")
@example("  leading and trailing spaces  ")
@example("显卡 A100 — ünïcödé")
@example("")
@example("-n")
@example("$HOME ${PATH} $((1+1))")
def test_join_keeps_any_value_literal(value: str) -> None:
    assert run_sh(join(["printf", "%s", value])) == value.encode()


@settings(max_examples=50, deadline=None)
@given(st.lists(TEXT, min_size=1, max_size=4))
def test_join_keeps_argument_boundaries(values: list[str]) -> None:
    # NUL-terminated, one per argument: words never split or merge, whatever they hold.
    out = run_sh(join(["printf", "%s\\000", *values]))
    assert out.split(b"\x00")[:-1] == [v.encode() for v in values]


def test_quote_refuses_secrets() -> None:
    with pytest.raises(TypeError, match="never be put on a command line"):
        quote(Secret("hunter2"))
    with pytest.raises(TypeError):
        join(["echo", Secret("hunter2")])
    with pytest.raises(TypeError):
        with_env("true", {"TOKEN": Secret("hunter2")})


def test_quote_stringifies_other_values() -> None:
    assert quote(8) == "8"
    assert quote("a b") == "'a b'"


def test_secret_prints_masked() -> None:
    secret = Secret("hunter2")
    assert str(secret) == MASK
    assert repr(secret) == f"Secret({MASK})"
    assert f"{secret}" == MASK
    assert "hunter2" not in repr([secret, {"token": secret}])
    assert secret.reveal() == "hunter2"
    assert secret == Secret("hunter2")
    assert secret != Secret("other")
    assert secret != "hunter2"
    assert len({secret, Secret("hunter2")}) == 1


def test_mask_replaces_every_secret_value() -> None:
    text = "login hunter2 then token abc123, again hunter2"
    assert mask(text, [Secret("hunter2"), "abc123"]) == f"login {MASK} then token {MASK}, again {MASK}"
    assert mask(text, []) == text
    assert mask(text, [Secret(""), ""]) == text  # an empty secret must not mask every gap


@pytest.mark.parametrize("name", ["1ABC", "A-B", "A B", "", "A=B", "é", "PATH;rm", "$X"])
def test_with_env_rejects_bad_names(name: str) -> None:
    with pytest.raises(ValueError, match="not a valid environment variable name"):
        with_env("true", {name: "x"})


def test_with_env_quotes_values_for_the_shell() -> None:
    command = with_env(join(["sh", "-c", 'printf "%s|%s" "$A" "$_B2"']), {"A": "$(id) ; x", "_B2": "it's"})
    assert run_sh(command) == b"$(id) ; x|it's"
    assert with_env("true", {}) == "true"


def test_sh_c_and_sudo_wrap_one_argument() -> None:
    script = "printf '%s' \"$0\"; echo ' done'"
    assert run_sh(sh_c(script)) == b"sh done\n"
    assert sudo("id -u") == "sudo -n sh -c 'id -u'"
    assert sudo(join(["ls", "/root dir"]), user="ubuntu") == (
        "sudo -n -u ubuntu sh -c " + shell.quote("ls '/root dir'")
    )
