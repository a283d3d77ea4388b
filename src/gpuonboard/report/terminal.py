"""Terminal output (rich): a live per-host progress line while running, then tables and a recap."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Sequence
from types import TracebackType
from typing import Any

from gpuonboard.errors import ExitCode
from gpuonboard.i18n import status_word, t, verdict_word
from gpuonboard.results import HostResult, HostVerdict, RunResult, host_record, judged

_STATUS_STYLE = {"ok": "green", "changed": "yellow", "failed": "bold red", "unreachable": "bold magenta"}
_VERDICT_STYLE = {
    "pass": "green",
    "warn": "yellow",
    "fail": "bold red",
    "unverified": "bold cyan",
    "info": "dim",
}


def reader_left(stream: Any = None) -> None:
    """The reader of our output has gone (`... | head`): point the stream (stdout by default)
    at /dev/null, so nothing more is written and Python's own flush at exit does not fail
    again. The caller then exits with ExitCode.READER_LEFT."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, (stream or sys.stdout).fileno())


def console(stderr: bool = False) -> Any:
    """A rich Console (imported lazily: rich costs start-up time). When the reader of our output
    has gone (`gpuonboard sync ... | head -1`), it exits quietly with 141 (128 + SIGPIPE, as a
    shell tool killed by it), the run's work and reports done; rich's own reaction was a silent
    exit 1, which reads as a failed host."""
    from rich.console import Console
    from rich.segment import Segment

    from gpuonboard.termtext import for_terminal

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            reader_left(sys.stderr if stderr else sys.stdout)
            raise SystemExit(ExitCode.READER_LEFT)

        def render(self, renderable: Any, options: Any = None) -> Any:
            # what is drawn, never an escape sequence a host's text carried (a window title, a
            # clipboard write); rich's own styles and cursor moves are added after this
            for seg in super().render(renderable, options):
                if seg.control or seg.text.isprintable():
                    yield seg
                else:
                    yield Segment(for_terminal(seg.text), seg.style, seg.control)

    return _Console(stderr=stderr, highlight=False, soft_wrap=False)


class Progress:
    """Live per-host status lines on a terminal; one plain line per finished host otherwise."""

    def __init__(self, hosts: Sequence[str], enabled: bool = True) -> None:
        self.state = {h: "waiting" for h in hosts}
        self.started = time.monotonic()
        self.enabled = enabled
        self.tty = enabled and sys.stdout.isatty()
        self._live: Any = None
        self._lock = threading.Lock()
        # made when first needed: off a terminal that is a host's first finished line, so
        # rich's import (~35 ms) follows the hosts' start (an upload's first byte) instead of
        # preceding it
        self._console: Any = None

    def __enter__(self) -> Progress:
        if self.tty:
            from rich.live import Live

            self._console = console()
            self._live = Live(self._render(), console=self._console, refresh_per_second=4, transient=True)
            self._live.__enter__()
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._live is not None:
            self._live.__exit__(et, ev, tb)

    def event(self, host: str, what: str) -> None:
        """Record a host's new phase (called from worker threads)."""
        with self._lock:
            self.state[host] = what
            if self._live is not None:
                self._live.update(self._render())
            elif self.enabled and what in _STATUS_STYLE:
                from rich.markup import escape

                self._console = self._console or console()
                self._console.print(f"[{_STATUS_STYLE[what]}]{what:>11}[/] {escape(host)}")

    def _render(self) -> Any:
        from rich.table import Table

        done = sum(1 for s in self.state.values() if s in _STATUS_STYLE)
        t = Table.grid(padding=(0, 1))
        t.add_row(f"[bold]{done}/{len(self.state)} hosts done[/] ({time.monotonic() - self.started:.1f}s)")
        active = [(h, s) for h, s in self.state.items() if s not in _STATUS_STYLE and s != "waiting"]
        from rich.markup import escape

        for host, what in active[:20]:
            t.add_row(escape(f"  {host}: {what}..."))
        if len(active) > 20:
            t.add_row(f"  ... and {len(active) - 20} more")
        return t


def short_failures(r: HostResult, verdict: HostVerdict) -> list[str]:
    """Pure: what failed on a host, as names only (`gpu_count`, `step disk_speed`): its failed
    rules and benchmarks (unverified ones under --strict), then each failed step. The verdict
    line lists these; each failed step's reason has a line of its own (failed_step_lines)."""
    named = [x for x in verdict.failed if not x.startswith("step ")]
    steps = [f"step {st.step}" for st in r.steps if _unexplained(st)]
    return named + [s for s in steps if s not in named]


def _unexplained(step: Any) -> bool:
    """A failed step (record or StepResult) that no failed rule of its own explains: the
    acceptance step that failed on `gpu_count` is told by that rule's row and note."""
    get = step.get if isinstance(step, dict) else lambda k: getattr(step, k, None)
    checks = get("checks") or []
    verdicts = [c.get("verdict") if isinstance(c, dict) else getattr(c, "verdict", None) for c in checks]
    return get("status") == "failed" and "fail" not in verdicts


def failed_step_lines(r: HostResult) -> list[str]:
    """Pure: `host: step: failed: reason`, one per failed step of the host that no failed rule
    explains (a `prove` step's failure sat inside a 538-character verdict line, with no line of
    its own)."""
    return [f"{r.host.name}: {s.step}: failed: {s.msg}" for s in r.steps if _unexplained(s)]


def verdict_line(r: HostResult, verdict: HostVerdict, lang: str = "en") -> str | None:
    """`verdict for h1: GO with 2 warnings: persistence_mode, mig_mode` (rich markup): the
    host's verdict as the run computed it (results.conclude), which summary.json stores and
    `invoke report` shows. A NO-GO names what failed, briefly (`NO-GO, failed: ram, step
    disk_speed`): the reasons are in the table above it and in the failed-step lines.

    None for a host whose acceptance step did not run (a `prove` run, `--skip acceptance`)
    unless something failed: its box was compared with no order, so it has no verdict; a
    failure is still a NO-GO."""
    from rich.markup import escape

    from gpuonboard.report.view import host_headline

    if verdict.word != "NO-GO" and not judged(host_record(r)):
        return None
    go, rest = host_headline(verdict, lang)
    names = [] if go else short_failures(r, verdict)
    if names:
        rest = t("nogo_failed", lang, items=", ".join(names))
    word = f"[bold green]{t('GO', lang)}[/]" if go else f"[bold red]{t('NO-GO', lang)}[/]"
    return t("verdict_line", lang, host=escape(r.host.name), verdict=word + escape(rest))


NARROW = 120  # columns below which the rules table folds `expected` into the actual cell


def _rules_table(r: HostResult, checks: Sequence[Any], lang: str, width: int) -> Any:
    """The host's rules as a table of short cells; the advice of a rule that did not pass is
    printed under it (rule_notes), full width: in a fourth of an 80-column terminal it ran to
    20 lines a rule. Below NARROW columns the table has three columns (rule, verdict, actual)
    and a rule that did not pass says what was expected in its actual cell (a passed rule met
    it; the reports show every expected value)."""
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    narrow = width < NARROW
    # light rules between columns, none around: the text keeps ~60 of 80 columns
    table = Table(
        title=escape(f"{r.host.name} — {r.host.vendor_name}"),
        title_justify="left",
        expand=False,
        box=box.SIMPLE_HEAD,
        padding=(0, 1),
        pad_edge=False,
    )
    table.add_column(t("c_rule", lang), overflow="fold")
    if narrow:
        table.add_column(t("c_verdict", lang), no_wrap=True)
    else:
        table.add_column(t("c_expected", lang), overflow="fold")
    table.add_column(t("c_actual", lang), overflow="fold")
    if not narrow:
        table.add_column(t("c_verdict", lang), no_wrap=True)
    for c in checks:
        # text from the host (process names, error lines) is data, never rich markup
        verdict = f"[{_VERDICT_STYLE[c.verdict]}]{escape(verdict_word(c.verdict, lang))}[/]"
        if not narrow:
            table.add_row(escape(c.name), escape(c.expected), escape(c.actual), verdict)
            continue
        actual = escape(c.actual)
        if c.verdict not in ("pass", "info"):
            actual += f" [dim]({escape(t('c_expected', lang))}: {escape(c.expected)})[/]"
        table.add_row(escape(c.name), verdict, actual)
    return table


def rule_notes(checks: Sequence[Any], lang: str = "en") -> list[str]:
    """Pure: `  gpu_count (FAIL): 4 of the 8 ordered GPUs missing; ask the vendor...`, one
    line per rule that did not pass and says why (a passed rule's note is in the report)."""
    return [
        f"  {c.name} ({verdict_word(c.verdict, lang)}): {c.detail}"
        for c in checks
        if c.detail and c.verdict not in ("pass", "info")
    ]


def print_results(run: RunResult, con: Any = None, rules: bool = True, lang: str = "en") -> None:
    """Acceptance tables (expected / actual / verdict) per host, the advice of each rule that did
    not pass and a line per failed step under it, then the host's GO / NO-GO verdict line (the
    run's own), then the recap table (`lang`: en/zh)."""
    from rich.markup import escape
    from rich.table import Table

    con = con or console()
    for r, verdict in run:
        checks = [c for s in r.steps for c in s.checks]
        if rules and checks:
            con.print(_rules_table(r, checks, lang, con.width))
        # one line each, as wide as it is (the terminal wraps it for the eye, full width): advice
        # holds commands and URLs (the container toolkit's install line) to copy, which a
        # newline at the console's width cut in two (`...nvidia-container-toolkit` / `.list`)
        for note in rule_notes(checks, lang) if rules else []:
            con.print(escape(note), soft_wrap=True)
        for failed in failed_step_lines(r) if rules else []:
            con.print(escape(failed), soft_wrap=True)
        # one line per host that ran acceptance (a resumed run's skipped step ran nothing), or
        # whose other checks failed
        ran = any(s.step == "acceptance" and s.status != "skipped" for s in r.steps)
        line = verdict_line(r, verdict, lang) if rules and (checks or ran) else None
        if line is not None:
            con.print(line, soft_wrap=True)
    recap = Table(title=t("recap", lang), title_justify="left")
    # fold, never cut with "…": `rack7-node-0001` and `-0002` both shown as `rack7-n…` hid
    # which host failed on a narrow terminal
    for col in ("c_host", "c_status", "c_steps", "c_duration", "c_message"):
        recap.add_column(t(col, lang), overflow="fold")
    for r in run.hosts:
        steps = " ".join(f"{s.step}:{s.status}" for s in r.steps) or "-"
        recap.add_row(
            escape(r.host.name),
            f"[{_STATUS_STYLE[r.status]}]{escape(status_word(r.status, lang))}[/]",
            escape(steps),
            f"{r.duration:.1f}s",
            escape(r.msg),
        )
    con.print(recap)
