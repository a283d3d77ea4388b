"""`teardown_cost`: what the rental cost, from provisioning (the journal) or vars.rented_since to
now, rounded up by the vendor's billing unit. Pure helpers: the cost, the start time's forms,
the journal's earliest run."""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from gpuonboard import shell
from gpuonboard.steps.base import Plan, Step, StepContext, truthy
from gpuonboard.units import rfc3339

UNIT_SECONDS = {"second": 1, "minute": 60, "hour": 3600}


@dataclass(frozen=True)
class Cost:
    """What a rental cost: elapsed time, billed time (rounded up by unit), amount."""

    start: float
    end: float
    source: str
    unit: str
    rate: float | None
    currency: str

    @property
    def elapsed(self) -> float:
        """Seconds rented (never negative)."""
        return max(0.0, self.end - self.start)

    @property
    def billed_units(self) -> int:
        """Started billing units: a started hour (minute, second) is a paid one, the first too
        (a rental that started just now has started its first unit)."""
        return max(1, math.ceil(self.elapsed / UNIT_SECONDS[self.unit] - 1e-9))

    @property
    def billed_seconds(self) -> int:
        """Billed time in seconds."""
        return self.billed_units * UNIT_SECONDS[self.unit]

    @property
    def amount(self) -> float | None:
        """billed hours x hourly rate, or None without a rate."""
        if self.rate is None:
            return None
        return round(self.billed_seconds / 3600 * self.rate, 2)

    def text(self) -> str:
        """One sentence for the step message."""
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.start))
        head = (
            f"rented {_duration(self.elapsed)} since {since} ({self.source}); billed per {self.unit}:"
            f" {self.billed_units} {self.unit}{'' if self.billed_units == 1 else 's'}"
        )
        if self.amount is None:
            return head + "; no billing rate in the vendor profile, so no amount"
        return f"{head} x {self.rate:g} {self.currency}/hour = {self.amount:.2f} {self.currency}".rstrip()

    def to_json(self) -> dict[str, Any]:
        """For the step's diff (summary.json)."""
        return {
            "since": self.start,
            "until": self.end,
            "source": self.source,
            "elapsed_s": round(self.elapsed, 1),
            "unit": self.unit,
            "billed_units": self.billed_units,
            "billed_s": self.billed_seconds,
            "rate_per_hour": self.rate,
            "currency": self.currency,
            "amount": self.amount,
        }


def _duration(seconds: float) -> str:
    s = int(seconds)
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return (f"{d}d" if d else "") + f"{h}h{m:02d}m{s:02d}s"


def rental_cost(
    start: float, end: float, unit: str, rate: float | None, currency: str = "", source: str = ""
) -> Cost:
    """The rental's cost from start to end, rounded UP by the billing unit, times the hourly rate."""
    if unit not in UNIT_SECONDS:
        raise ValueError(f"billing unit must be one of {', '.join(UNIT_SECONDS)}, not {unit!r}")
    return Cost(start, end, source, unit, rate, currency)


def parse_since(value: Any) -> float | None:
    """`vars.rented_since`: epoch seconds or ISO 8601 (`2026-11-29T17:35:00+08:00`); None when unset."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _in_range(float(value), value)
    if isinstance(value, datetime):
        return _in_range(value.timestamp(), value)
    text = str(value).strip()
    try:
        return _in_range(float(text), value)
    except ValueError as exc:
        if "between" in str(exc):
            raise
    try:
        return _in_range(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp(), value)
    except (ValueError, OverflowError) as exc:
        if "between" in str(exc):
            raise
        raise ValueError(f"{value!r} is not epoch seconds or an ISO 8601 time") from None


SINCE_RANGE = (946684800.0, 4102444800.0)  # 2000-01-01 .. 2100-01-01 UTC


def _in_range(epoch: float, value: Any) -> float:
    """epoch when it is a time a rental can have started at, else ValueError."""
    if not (math.isfinite(epoch) and SINCE_RANGE[0] <= epoch < SINCE_RANGE[1]):
        raise ValueError(f"{value!r} is not a time between the years 2000 and 2100")
    return epoch


def _utc(epoch: float) -> str:
    return rfc3339(epoch)


def run_id_time(run_id: str) -> float | None:
    """The local time a run id (`20261129-173501-3fa2`) starts with, or None."""
    try:
        return time.mktime(time.strptime(run_id[:15], "%Y%m%d-%H%M%S"))
    except (ValueError, OverflowError):
        return None


def journal_start(state_dir: Path, host: str) -> tuple[float, str] | None:
    """The earliest run recorded for `host` in its provision journal (else any of its journals
    but teardown's): (epoch, where it came from)."""
    found: list[tuple[int, float, str]] = []
    try:
        files = sorted(state_dir.glob("*.json"))
    except OSError:
        return None
    for path in files:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or data.get("host") != host or data.get("playbook") == "teardown":
            continue
        ids = [str(data.get("first_run_id") or ""), str(data.get("run_id") or "")]
        ids += [str(r.get("run_id") or "") for r in (data.get("steps") or {}).values() if isinstance(r, dict)]
        times = [t for t in (run_id_time(i) for i in ids if i) if t is not None]
        if times:
            rank = 0 if data.get("playbook") == "provision" else 1
            found.append((rank, min(times), f"the {data.get('playbook')} journal"))
    if not found:
        return None
    best_rank = min(f[0] for f in found)
    t, src = min((f[1], f[2]) for f in found if f[0] == best_rank)
    return t, src


# teardown's last word: before, it removed the watcher that would have shut an idle box down and
# never said that the box still ran, billed
STILL_BILLED = (
    "; autostop removed: the box is still running and billed: release it at the vendor (or rerun"
    " `invoke autostop --host {host}` to have it shut down once idle)"
)


class TeardownCostStep(Step):
    """Read-only: what the rental cost from provisioning (or vars.rented_since) to now."""

    name = "teardown_cost"
    read_only = True
    ARGS = {
        "since": "rental start (vars.rented_since): epoch seconds or ISO 8601; default: the journal",
        "unit": "billing unit: second | minute | hour (vendor billing.unit)",
        "rate": "price per hour (vendor billing.rate)",
        "currency": "currency (vendor billing.currency)",
        "state_dir": "journal directory (default .gpuonboard/state under the project)",
        "now": "end of the rental in epoch seconds (default: now; for tests)",
        "still_billed": "end the message with the sentence that the box is still running and billed"
        " (teardown's last word: it removed the autostop watcher and powers nothing off)",
    }

    def plan(self, ctx: StepContext) -> Plan:
        """The cost, and with `still_billed` the sentence that the box still runs, billed."""
        plan = self._cost(ctx)
        if truthy(self.args.get("still_billed", False), "still_billed"):
            plan.msg += STILL_BILLED.format(host=shell.quote(ctx.host.name))
        return plan

    def _cost(self, ctx: StepContext) -> Plan:
        """Compute the cost; never fails the run (an unknown start is said in the message)."""
        try:
            since = parse_since(self.args.get("since"))
        except ValueError as exc:
            return Plan(False, f"cost unknown: vars.rented_since: {exc}")
        source = "vars.rented_since"
        if since is None:
            state_dir = Path(str(self.args.get("state_dir") or ctx.project / ".gpuonboard" / "state"))
            found = journal_start(state_dir, ctx.host.name)
            if found is None:
                return Plan(
                    False, "cost unknown: no provision run in the journal; set vars.rented_since on the host"
                )
            since, source = found
        unit = str(self.args.get("unit") or "hour")
        raw_rate = self.args.get("rate")
        try:
            rate = float(raw_rate) if raw_rate not in (None, "", "None") else None
            if rate is not None and not (math.isfinite(rate) and rate >= 0):
                raise ValueError(f"the billing rate must be a price per hour (0 or more), not {raw_rate!r}")
            now = float(self.args["now"]) if self.args.get("now") not in (None, "") else time.time()
            cost = rental_cost(since, now, unit, rate, str(self.args.get("currency") or ""), source)
        except (TypeError, ValueError) as exc:
            return Plan(False, f"cost unknown: {exc}")
        if since > now + 60:
            return Plan(
                False,
                f"cost unknown: the rental start {_utc(since)} ({source}) is after now ({_utc(now)});"
                " check it (or this machine's clock)",
            )
        if since > now:  # a minute of clock skew is no error: billed as just started, and said
            skew = f"{source}, {math.ceil(since - now)}s after this machine's clock: counted from now"
            cost = rental_cost(now, now, unit, rate, str(self.args.get("currency") or ""), skew)
        return Plan(False, cost.text(), diff={"cost": cost.to_json()})
