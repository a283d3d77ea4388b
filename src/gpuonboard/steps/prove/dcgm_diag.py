"""NVIDIA DCGM's `dcgmi diag` inside the allreduce step: the level (set, or the deepest that
fits a time budget), the run (bounded, stopped with the SSH session) and its rules, one per
DCGM test (pure, over the parsed `dcgmi diag -j`: facts.dcgm)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, replace
from typing import Any

from gpuonboard import shell
from gpuonboard.facts import dcgm
from gpuonboard.facts.nvidia_smi import GpuReport
from gpuonboard.facts.probe import Probe
from gpuonboard.steps.base import Check, StepArgsError, StepContext, Verdict

DCGM_PROBE = Probe("prove_dcgmi", "command -v dcgmi")


# seconds before `dcgmi diag -r <level>` is given up (levels 3 and 4 run for 30 min / 1-2 h)
DCGM_TIMEOUTS = {1: 300, 2: 900, 3: 3600, 4: 3 * 3600}
# how facts.dcgm.parse's error begins for output that starts a JSON document that is not whole
# (cut short, or broken mid-way)
NOT_WHOLE_JSON = "not JSON ("


def dcgm_level(value: Any, budget: Any) -> int:
    """The diagnostic level: `dcgm_level` when set (0 = off), else the deepest level that fits
    `dcgm_budget` seconds, else 1 (quick)."""
    if value not in (None, ""):
        try:
            level = int(value)
        except (TypeError, ValueError):
            raise StepArgsError(f"dcgm_level must be 0 (off) or 1-4, not {value!r}") from None
        if level != 0 and level not in dcgm.LEVEL_SECONDS:
            raise StepArgsError(f"dcgm_level must be 0 (off) or 1-4, not {level}")
        return level
    if budget not in (None, ""):
        try:
            return dcgm.level_for_budget(float(budget))
        except (TypeError, ValueError):
            raise StepArgsError(f"dcgm_budget must be a number of seconds, not {budget!r}") from None
    return 1


# why DCGM skips a test, for the message of a skipped one (NVIDIA/DCGM issues #55, #139)
_WHY_SKIP = (
    "a failed earlier test stops the later ones, and a plugin that does not support this GPU or"
    " driver skips its test: `dcgmi diag -r <level> -v` says which"
)


def _skipped_summary(skipped: Sequence[str], total: int, level: int) -> tuple[Verdict, str]:
    """The summary's verdict and detail: `unverified` naming the tests DCGM skipped (a skipped
    test verified nothing: a level-3 run whose PCIe, memory and stress tests all skipped is no
    level-3 pass), else a pass."""
    if not skipped:
        return "pass", ""
    said = "every test" if len(skipped) == total else f"{len(skipped)} of {total} tests"
    return "unverified", (
        f"DCGM skipped {said} of level {level} ({', '.join(skipped)}): they verified nothing;"
        f" {_WHY_SKIP.replace('<level>', str(level))}"
    )


def _uncovered(diag: dcgm.DcgmDiag, listed: int | None) -> str:
    """'DCGM gave results for GPU 0, 1 only, of the 8 GPUs nvidia-smi lists' where the GPUs its
    tests name (entity ids, DCGM 3's "0,1,2" lists split) are fewer than the box's: the others
    were never tested (a GPU DCGM does not support, a run restricted to some GPUs); '' otherwise
    (or where an id is no number: nothing to count)."""
    ids = {i.strip() for t in diag.tests for e in t.entities for i in e.split(",") if i.strip()}
    if not listed or not ids or not all(i.isdecimal() for i in ids) or len(ids) >= listed:
        return ""
    shown = ", ".join(sorted(ids, key=int))
    return f"DCGM gave results for GPU {shown} only, of the {listed} GPUs nvidia-smi lists"


def dcgm_checks(
    diag: dcgm.DcgmDiag | None,
    level: int,
    why: str = "",
    listed: int | None = None,
    incomplete: bool = False,
) -> list[Check]:
    """Rules over a parsed `dcgmi diag -j` (pure): one `dcgm_<test>` rule per DCGM test (Fail
    fails with DCGM's message, Warn warns, Skip is `unverified`: DCGM ran nothing there) plus a
    `dcgm_diag` summary, `unverified` when DCGM skipped a test of the level, naming them.
    `diag=None` without `why`: DCGM is not installed (information, never a failure). `listed`:
    the GPUs nvidia-smi lists; a run whose results name fewer is no pass of the others.
    `incomplete` (the run stopped by its timeout) or a DCGM document cut short (or broken
    mid-way): `unverified`, but a test it had reported Fail or Warn before the break still fails
    or warns (`DcgmDiag.partial`)."""
    want = f"dcgmi diag -r {level}: every test Pass"
    if diag is None and not why:
        return [
            Check(
                "dcgm_diag",
                "(information) dcgmi diag when DCGM is installed",
                "DCGM not installed: skipped",
                "pass",
                "install NVIDIA DCGM (datacenter-gpu-manager) to add its diagnostics to this step",
            )
        ]
    if diag is None or diag.error:
        reason = why or (diag.error if diag else "") or "no output"
        if incomplete or (diag is not None and (diag.error or "").startswith(NOT_WHOLE_JSON)):
            return _not_whole_checks(diag, level, reason, incomplete)
        return [
            Check(
                "dcgm_diag",
                want,
                f"could not read dcgmi output: {reason}",
                "warn",
                "dcgmi needs its host engine: `systemctl start nvidia-dcgm` (or `nv-hostengine`);"
                " run `dcgmi diag -r 1 -j` by hand to see why",
            )
        ]
    counts = {k: sum(1 for t in diag.tests if t.status == k) for k in ("pass", "fail", "warn", "skip")}
    other = len(diag.tests) - sum(counts.values())
    checks = [
        Check(
            "dcgm_diag",
            want,
            f"DCGM {diag.version or '?'}"
            + (f" (driver {diag.driver})" if diag.driver else "")
            + f", level {level}: {len(diag.tests)} tests, "
            + ", ".join(f"{n} {k}" for k, n in counts.items() if n)
            + (f", {other} unrecognised" if other else ""),
            *_skipped_summary([t.name for t in diag.tests if t.status == "skip"], len(diag.tests), level),
        )
    ]
    if uncovered := _uncovered(diag, listed):
        summary = checks[0]
        checks[0] = replace(
            summary,
            actual=f"{summary.actual}; {uncovered}",
            verdict="unverified" if summary.verdict == "pass" else summary.verdict,
            detail="; ".join(
                filter(
                    None, [summary.detail, f"{uncovered}: DCGM verified nothing on the others; {_WHY_SKIP}"]
                )
            ).replace("<level>", str(level)),
        )
    return checks + _test_checks(diag.tests, level)


def _not_whole_checks(diag: dcgm.DcgmDiag | None, level: int, reason: str, incomplete: bool) -> list[Check]:
    """A run stopped by its timeout, or a DCGM document that ends (or breaks) mid-way: an
    incomplete probe, `unverified`; but a test DCGM had reported Fail or Warn before the break
    fails or warns (what DCGM found is not unsaid by a cut), naming the break."""
    want = f"dcgmi diag -r {level}: every test Pass"
    read = diag.partial if diag else ()
    where = "cut short" if diag is not None and diag.cut else "broken"
    # (the last `after_break` were read whole after a break: around it, even in a document also
    # cut short)
    first_after = len(read) - (diag.after_break if diag else 0)
    bad_at = [i for i, t in enumerate(read) if t.status in ("fail", "warn")]
    bad = [read[i] for i in bad_at]
    if incomplete:
        detail = (
            "DCGM gave no whole result, so nothing was verified (no claim about the GPUs); rerun the"
            f" step, or run `dcgmi diag -r {level} -j` by hand; a diag that hangs can be a GPU fault:"
            " check `dmesg` for Xid errors or a hung GPU (does `nvidia-smi` still answer?)"
        )
    elif bad:
        found = ", ".join(f"{t.name} {t.raw_status}" for t in bad)
        said = (
            "was broken mid-way; around the break it reported"
            if where == "broken"
            else "was broken mid-way, then cut short; before the cut it reported"
            if bad_at[-1] >= first_after
            else "was cut short after it reported"
        )
        detail = (
            f"DCGM's document {said} {found}"
            " (judged in their own rules); the rest was not read, so nothing else was verified;"
            f" rerun `dcgmi diag -r {level} -j` and check that its output is whole JSON"
        )
    else:
        detail = (
            "DCGM gave no whole result, so nothing was verified (no claim about the GPUs); rerun the"
            f" step, or run `dcgmi diag -r {level} -j` by hand and check that its output is whole JSON"
        )
    around = "read around a break in DCGM's document"
    notes = [
        around if where == "broken" or i >= first_after else f"read before DCGM's document was {where}"
        for i in bad_at
    ]
    return [Check("dcgm_diag", want, f"incomplete probe: {reason}", "unverified", detail)] + _test_checks(
        bad, level, notes
    )


def _test_checks(tests: Sequence[dcgm.DcgmTest], level: int, notes: Sequence[str] = ()) -> list[Check]:
    """One `dcgm_<test>` rule per DCGM test; `notes` (per test: where it was read from a
    document not whole) is added to each one's reading."""
    checks: list[Check] = []
    seen: set[str] = set()
    for i, t in enumerate(tests):
        tail = f" ({notes[i]})" if i < len(notes) else ""
        name = f"dcgm_{dcgm.slug(t.name)}"
        if name in seen:
            name = f"{name}_{dcgm.slug(t.category)}"
        seen.add(name)
        gpus = f" on GPU {', '.join(t.gpus)}" if t.gpus and t.status in ("fail", "warn") else ""
        said = " | ".join(t.messages)
        if t.status == "pass" and t.messages:
            # a Pass carrying DCGM's own error (NVIDIA/DCGM issue #284: the memory test's
            # DCGM_FR_MEMORY_ALLOC under a Pass): what DCGM found is said, never a clean pass
            checks.append(
                Check(
                    name,
                    "Pass",
                    f"{t.raw_status} ({t.category}) with DCGM's error: {t.messages[0]}{tail}",
                    "warn",
                    f"DCGM passed its {t.name} test but recorded an error ({said}): the test may not have run"
                    f" as configured; `dcgmi diag -r {level} -v` tells more",
                )
            )
        elif t.status == "pass":
            checks.append(Check(name, "Pass", f"{t.raw_status} ({t.category}){tail}", "pass"))
        elif t.status == "skip":
            # (skipped on some GPUs, passed on the others: name the GPUs it verified nothing on)
            some = f" on GPU {', '.join(t.gpus)}" if t.gpus and set(t.gpus) != set(t.entities) else ""
            checks.append(
                Check(
                    name,
                    "Pass",
                    f"{t.raw_status}{some} ({t.category}): not run by DCGM{' there' if some else ''}{tail}",
                    "unverified",
                    said or f"DCGM did not run its {t.name} test, so it verified nothing; {_WHY_SKIP}",
                )
            )
        elif t.status in ("fail", "warn"):
            checks.append(
                Check(
                    name,
                    "Pass",
                    f"{t.raw_status}{gpus}" + (f": {t.messages[0]}" if t.messages else "") + tail,
                    "fail" if t.status == "fail" else "warn",
                    said
                    or f"DCGM's {t.name} test reported {t.raw_status}; `dcgmi diag -r {level} -v` tells more",
                )
            )
        else:
            checks.append(Check(name, "Pass", f"unrecognised status {t.raw_status!r}{tail}", "warn", said))
    return checks


def dcgm_failure_note(checks: Sequence[Check]) -> str:
    """'; DCGM software: <message>' for the first failed DCGM test (for the step's message)."""
    for c in checks:
        if c.name.startswith("dcgm_") and c.name != "dcgm_diag" and c.verdict == "fail":
            return f"; DCGM {c.name[5:]}: {c.actual}"
    return ""


def gpus_on_box(report: GpuReport | None) -> int | None:
    """How many GPUs the box has by nvidia-smi, for DCGM's results to cover: the `Attached GPUs`
    it states (a `-q` that shows 3 of its 8 attached, a view of some GPUs or a cut exactly
    between two records, still says 8), else the GPUs of a report whose set is whole (read
    whole, or counted by a whole listing: `set_whole`); None where a cut leaves it unknown."""
    if report is None:
        return None
    whole = report.complete or report.set_whole
    if report.attached_gpus:
        return max(report.attached_gpus, len(report.gpus)) if whole else report.attached_gpus
    return len(report.gpus) if whole else None


def run_dcgm(ctx: StepContext, level: int, timeout: float) -> tuple[list[Check], dict[str, Any] | None]:
    """Run `dcgmi diag -r <level> -j` when the fact probe found dcgmi; rules and the parsed result."""
    found = ctx.facts.raw.get(DCGM_PROBE.name)
    if found is None or found.exit_code != 0 or not found.stdout.strip():
        return dcgm_checks(None, level), None
    # a level 3 / 4 diag loads the GPUs for up to hours: it must not outlive the session either
    cmd = shell.sh_c(
        shell.until_session_ends(
            shell.join(["timeout", str(max(1, int(timeout)))]) + " " + dcgm.command(level)
        )
    )
    r = ctx.runner.run(cmd, timeout=timeout + 30)
    if r.exit_code == 124:
        why = (
            f"dcgmi diag -r {level} did not finish within {timeout:.0f} s"
            " (raise dcgm_timeout or lower dcgm_level)"
        )
        return dcgm_checks(None, level, why, incomplete=True), None
    diag = dcgm.parse(r.stdout)
    if diag.error and r.stderr.strip():
        # (replace: the tests read before a break, and whether it was a cut, are kept)
        diag = replace(diag, error=f"{diag.error}; {dcgm.printable(r.stderr.strip().splitlines()[-1])}")
    checks = dcgm_checks(diag, level, listed=gpus_on_box(ctx.facts.gpu))
    return checks, {**asdict(diag), "level": level, "exit_code": r.exit_code}
