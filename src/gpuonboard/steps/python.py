"""The `python` step: a user's own step, written as a Python function that receives the host's
open connection (a `fabric.Connection`, the same login the run uses).

    - step: python
      args:
        call: nccl:check_env        # <project>/steps/nccl.py, function check_env
        args: {min_free_gb: 100}    # handed to the function as a dict

The function is called as `fn(conn, host, args, check)`:
- `conn`: the host's `fabric.Connection` (`conn.run(...)`, `conn.sudo(...)`, `conn.put(...)`;
  each call opens a session of its own on the run's one login);
- `host`: the inventory's `Host` (name, address, vars, order, vendor);
- `args`: the step's `args` mapping, rendered with the host's variables as every step's are;
- `check`: True under `--check`, when the function must change nothing.

It returns None (nothing changed), or a mapping with `changed` (bool), `failed` (bool) and
`msg` (one sentence). An exception is a failed step that names the function and the error;
the run goes on with the next host as for any failed step. The module is read from the
project's `steps/` directory only, and loaded once per process.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from gpuonboard.steps.base import Plan, Step, StepArgsError, StepContext, StepResult

CALL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*):([A-Za-z_][A-Za-z0-9_]*)")
MAX_MSG = 2000  # characters of a function's message or error kept in the report
_LOADED: dict[Path, Any] = {}
_LOCK = threading.Lock()


class PythonStep(Step):
    """Call `module:function` from the project's `steps/` directory with the host's connection."""

    name = "python"
    read_only = False
    ARGS = {
        "call": "module:function, the module a file <project>/steps/<module>.py",
        "args": "a mapping handed to the function (rendered with the host's variables)",
    }

    def __init__(self, args: Mapping[str, Any], label: str | None = None) -> None:
        super().__init__(args, label)
        call = self.args.get("call")
        match = CALL.fullmatch(call) if isinstance(call, str) else None
        if match is None:
            raise StepArgsError(
                "argument 'call' is required: module:function, for a function in <project>/steps/<module>.py"
            )
        self.module, self.function = match.groups()
        fn_args = self.args.get("args", {})
        if not isinstance(fn_args, Mapping):
            raise StepArgsError("argument 'args' must be a mapping (name: value)")
        self.fn_args = dict(fn_args)

    @property
    def spec(self) -> str:
        """`module:function`, as the playbook names it."""
        return f"{self.module}:{self.function}"

    def plan(self, ctx: StepContext) -> Plan:
        """Whether a user function is decided only by calling it: see execute."""
        return Plan(True, f"call {self.spec}")

    def execute(self, ctx: StepContext) -> StepResult:
        """Load the function, call it (in check mode too, with check=True), report its answer."""
        start = time.monotonic()

        def done(status: Any, msg: str) -> StepResult:
            return StepResult(self.label, status, msg, [], None, time.monotonic() - start, ctx.check)

        conn = getattr(ctx.runner, "connection", None)
        if conn is None:
            return done("failed", f"the python step {self.spec} needs an SSH host (connection: ssh)")
        try:
            fn = load_function(ctx.project, self.module, self.function)
        except StepArgsError as exc:
            return done("failed", str(exc))
        try:
            answer = fn(conn, ctx.host, dict(self.fn_args), ctx.check)
        except Exception as exc:  # the user's code: its error is the step's result, never ours
            return done("failed", _bounded(f"{self.spec} raised {type(exc).__name__}: {exc}"))
        return _result(self.spec, answer, ctx.check, done)


def _bounded(text: str) -> str:
    """A message kept to MAX_MSG characters (the start and the end)."""
    if len(text) <= MAX_MSG:
        return text
    return text[: MAX_MSG // 2] + " ... " + text[-MAX_MSG // 2 :]


def _result(spec: str, answer: Any, check: bool, done: Callable[[Any, str], StepResult]) -> StepResult:
    """The step's result from what the function returned (None, or a mapping)."""
    if answer is None:
        return done("ok", f"{spec}: nothing to change")
    if not isinstance(answer, Mapping):
        return done(
            "failed",
            f"{spec} returned {type(answer).__name__}; return None or a mapping with changed, failed, msg",
        )
    msg = _bounded(str(answer.get("msg") or spec))
    if answer.get("failed"):
        return done("failed", msg)
    if answer.get("changed"):
        return done("changed", f"would {msg} (check mode: nothing changed)" if check else msg)
    return done("ok", msg)


def load_function(project: Path, module: str, function: str) -> Callable[..., Any]:
    """`function` of <project>/steps/<module>.py, the module loaded once per process."""
    path = (project / "steps" / f"{module}.py").resolve()
    with _LOCK:
        mod = _LOADED.get(path)
        if mod is None:
            if not path.is_file():
                raise StepArgsError(
                    f"no file {path} for the python step {module}:{function}; create it or fix 'call'"
                )
            spec = importlib.util.spec_from_file_location(f"gpuonboard_user_steps.{module}", path)
            if spec is None or spec.loader is None:
                raise StepArgsError(f"{path} cannot be loaded as a Python module")
            mod = importlib.util.module_from_spec(spec)
            try:
                spec.loader.exec_module(mod)
            except Exception as exc:
                raise StepArgsError(f"{path} failed to load ({type(exc).__name__}: {exc})") from None
            sys.modules.setdefault(spec.name, mod)
            _LOADED[path] = mod
    fn = getattr(mod, function, None)
    if not callable(fn):
        raise StepArgsError(f"{path} has no function {function!r} for the python step {module}:{function}")
    return fn
