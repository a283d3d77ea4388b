"""GPU identity across runs: the pure comparison and the ledger file, on the 8 real serials and
UUIDs of a real 8 x H100 `nvidia-smi -q` capture (permuted, or one GPU replaced)."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from pathlib import Path

import pytest

from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.nvidia_smi import GpuInfo, parse_any
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.inventory import Host, OrderSpec
from gpuonboard.steps import REGISTRY
from gpuonboard.steps.base import StepContext
from gpuonboard.steps.checks import ledger
from gpuonboard.steps.checks.identity import GpuIdentityStep, compare, find_hand_back, rule_gpu_identity
from gpuonboard.steps.checks.ledger import GpuIdentity, LedgerEntry, LedgerError

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "real"
H100_Q = FIXTURES / "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt"
TABLE = FIXTURES / "nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt"
RTX_XML = FIXTURES / "nvidia-smi-q-x__geforce-rtx-4090__1gpu__driver535.86.05.xml"
# a serial / UUID of no GPU in the captures: the "new" GPU of a swap
NEW_SERIAL, NEW_UUID = "1650124099999", "GPU-00000000-1111-2222-3333-444444444444"


def real_gpus() -> list[GpuInfo]:
    gpus = list(parse_any(H100_Q.read_text()).gpus)
    assert len(gpus) == 8 and all(g.serial and g.uuid for g in gpus)
    return gpus


def entry(
    host: str, gpus: list[GpuInfo], when: float, outcome: str = "pass", failed: tuple[str, ...] = ()
) -> LedgerEntry:
    return ledger.new_entry(host, ledger.identities(gpus), outcome, failed, when=when)  # type: ignore[arg-type]


def test_the_real_capture_gives_8_distinct_identities() -> None:
    ids = ledger.identities(real_gpus())
    assert [g.index for g in ids] == list(range(8))
    assert ids[0].serial == "1650124031592" and ids[0].uuid == "GPU-ee7954ec-da95-fd7a-ddfd-c6b32cc2f8aa"
    assert len({g.serial for g in ids}) == len({g.uuid for g in ids}) == 8


def test_first_sight_passes_and_lists_the_serials() -> None:
    now = ledger.identities(real_gpus())
    check = rule_gpu_identity(now, [], {})
    assert check.verdict == "pass"
    assert check.actual.startswith("recorded 8 GPUs: serials 1650124031592, 1650124008135, ")
    assert check.actual.endswith("1650124007084")


def test_the_same_gpus_pass_against_the_last_run() -> None:
    gpus = real_gpus()
    check = rule_gpu_identity(ledger.identities(gpus), [entry("a", gpus, 1000.0)], {})
    assert check.verdict == "pass" and check.actual.startswith("same 8 GPUs as on ")


def test_a_new_enumeration_order_is_the_same_gpus_not_a_swap() -> None:
    gpus = real_gpus()
    permuted = [dataclasses.replace(g, index=(g.index + 1) % 8) for g in gpus]
    diff = compare(ledger.identities(gpus), ledger.identities(permuted))
    assert not diff.changed and len(diff.moved) == 8
    assert "serial 1650124031592: GPU 0 -> GPU 1" in diff.moved
    check = rule_gpu_identity(ledger.identities(permuted), [entry("a", gpus, 1000.0)], {})
    assert check.verdict == "pass" and "enumerated in another order" in check.actual


def test_one_replaced_gpu_warns_naming_its_index_and_both_serials() -> None:
    gpus = real_gpus()
    swapped = [dataclasses.replace(g, serial=NEW_SERIAL, uuid=NEW_UUID) if g.index == 3 else g for g in gpus]
    old = entry("a", gpus, 1000.0)
    check = rule_gpu_identity(ledger.identities(swapped), [old], {})
    assert check.verdict == "warn"
    assert check.actual == f"GPU 3: serial 1650124032506 -> {NEW_SERIAL}"
    assert check.detail.startswith(f"a GPU was swapped since the run of {old.day()}: fine if you asked")
    assert "ask the vendor why" in check.detail


def test_a_new_uuid_under_the_same_serial_is_another_gpu() -> None:
    gpus = real_gpus()
    reflashed = [dataclasses.replace(g, uuid=NEW_UUID) if g.index == 5 else g for g in gpus]
    diff = compare(ledger.identities(gpus), ledger.identities(reflashed))
    assert diff.swapped == [f"GPU 5: UUID GPU-980ea11b-91dc-db7b-72ac-0685abc43658 -> {NEW_UUID}"]


def test_a_missing_gpu_is_named_as_no_longer_reported() -> None:
    gpus = real_gpus()
    check = rule_gpu_identity(ledger.identities(gpus[:7]), [entry("a", gpus, 1000.0)], {})
    assert check.verdict == "warn"
    assert check.actual == "GPU 7: serial 1650124007084 no longer reported"


def test_the_last_run_is_what_counts() -> None:
    gpus = real_gpus()
    swapped = [dataclasses.replace(g, serial=NEW_SERIAL, uuid=NEW_UUID) if g.index == 3 else g for g in gpus]
    # swapped once (warned then); the run after that compares with the swapped box
    history = [entry("a", gpus, 1000.0), entry("a", swapped, 2000.0)]
    assert rule_gpu_identity(ledger.identities(swapped), history, {}).verdict == "pass"


def test_the_whole_box_of_a_failed_host_under_a_new_name_fails() -> None:
    gpus = real_gpus()
    failed = entry("old-box", gpus, 1000.0, "fail", ("throttling",))
    check = rule_gpu_identity(ledger.identities(gpus), [], {"old-box": failed})
    assert check.verdict == "fail"
    assert check.actual.endswith(
        f"all 8 GPUs are the GPUs of host old-box, which failed acceptance (throttling) on {failed.day()}"
    )
    assert "this is the box you rejected as host old-box" in check.detail


def test_part_of_a_failed_box_warns_naming_the_gpus() -> None:
    gpus = real_gpus()
    failed = entry("old-box", gpus[:2], 1000.0, "fail", ("ecc_uncorrectable",))
    check = rule_gpu_identity(ledger.identities(gpus), [], {"old-box": failed})
    assert check.verdict == "warn"
    assert (
        "GPU 0 (serial 1650124031592), GPU 1 (serial 1650124008135) were in host old-box, which failed"
        " acceptance (ecc_uncorrectable)" in check.actual
    )


def test_gpus_of_a_host_that_passed_are_a_note_not_a_verdict() -> None:
    gpus = real_gpus()
    other = entry("renamed", gpus, 1000.0, "pass")
    check = rule_gpu_identity(ledger.identities(gpus), [], {"renamed": other})
    assert check.verdict == "pass" and check.actual.endswith(f"seen before on host renamed ({other.day()})")
    assert find_hand_back(ledger.identities(gpus), {"renamed": other}) is None


def test_a_table_without_serials_is_unverified() -> None:
    gpus = list(parse_any(TABLE.read_text()).gpus)
    assert gpus and not any(g.serial or g.uuid for g in gpus)
    check = rule_gpu_identity(ledger.identities(gpus), [], {})
    assert (check.verdict, check.actual) == ("unverified", "serials not reported by this nvidia-smi output")


def test_a_consumer_card_without_serial_is_identified_by_its_uuid() -> None:
    gpus = list(parse_any(RTX_XML.read_text()).gpus)
    assert len(gpus) == 1 and gpus[0].serial is None and gpus[0].uuid
    check = rule_gpu_identity(ledger.identities(gpus), [], {})
    assert check.verdict == "pass" and check.actual == f"recorded 1 GPU: UUID {gpus[0].uuid}"


def test_serials_shared_by_several_gpus_identify_none() -> None:
    gpus = [dataclasses.replace(g, serial="0000000000000" if g.index < 4 else "1324") for g in real_gpus()]
    ids = ledger.identities(gpus)
    assert all(g.serial is None for g in ids) and all(g.uuid for g in ids)


def test_the_ledger_keeps_the_last_runs_and_round_trips(tmp_path: Path) -> None:
    gpus = [dataclasses.replace(g, board_part_number="692-2G520-0200-000") for g in real_gpus()]
    for i in range(7):
        ledger.record(
            tmp_path, entry("gpu-a", gpus, 1000.0 + i, "fail" if i == 6 else "pass", ("ram",)), keep=5
        )
    runs = ledger.load(tmp_path, "gpu-a")
    assert [r.time for r in runs] == [1002.0, 1003.0, 1004.0, 1005.0, 1006.0]
    assert runs[-1].acceptance == "fail" and runs[-1].failed_rules == ("ram",)
    assert (
        runs[-1].gpus == ledger.identities(gpus)
        and runs[-1].gpus[0].board_part_number == "692-2G520-0200-000"
    )
    text = (tmp_path / "gpu-a.json").read_text()
    doc = json.loads(text)
    assert doc["schema"] == ledger.SCHEMA and doc["host"] == "gpu-a"
    # one run a line (json's C encoder, not indent='s pure-Python one: 50 runs took ~6 ms a host)
    assert len(text.splitlines()) == 2 + 5 and text.endswith("\n]}\n")
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith(".")] == ["gpu-a.json"]


def test_hosts_with_replaced_characters_get_files_of_their_own(tmp_path: Path) -> None:
    assert ledger.ledger_path(tmp_path, "gpu 1") != ledger.ledger_path(tmp_path, "gpu_1")
    assert ledger.ledger_path(tmp_path, "../x").parent == tmp_path


def test_a_corrupt_ledger_is_refused_in_one_sentence_and_left_alone(tmp_path: Path) -> None:
    path = ledger.ledger_path(tmp_path, "gpu-a")
    path.write_text('{"schema": "gpuonboard.gpu-ledger/1", "host": "gpu-a", "runs": [{"time": ')
    with pytest.raises(LedgerError) as err:
        ledger.load(tmp_path, "gpu-a")
    assert str(err.value).startswith(f"the GPU ledger {path} is unreadable (")
    assert "move it aside or delete it to start a new GPU history for this host" in str(err.value)
    with pytest.raises(LedgerError):
        ledger.record(tmp_path, entry("gpu-a", real_gpus(), 1.0))
    assert path.read_text().endswith('"time": ')  # never overwritten
    # the rule says it, never crashes, and compares nothing
    check = rule_gpu_identity(ledger.identities(real_gpus()), [], {}, str(err.value))
    assert check.verdict == "unverified" and str(path) in check.detail


def test_another_hosts_ledger_is_not_taken_for_this_ones(tmp_path: Path) -> None:
    ledger.record(tmp_path, entry("gpu-a", real_gpus(), 1.0))
    ledger.ledger_path(tmp_path, "gpu-b").write_text(ledger.ledger_path(tmp_path, "gpu-a").read_text())
    with pytest.raises(LedgerError, match="it is the ledger of host 'gpu-a', not of 'gpu-b'"):
        ledger.load(tmp_path, "gpu-b")


def test_other_hosts_last_runs_before_this_run_and_unreadable_files(tmp_path: Path) -> None:
    gpus = real_gpus()
    ledger.record(tmp_path, entry("old-box", gpus, 1000.0, "fail"))
    ledger.record(tmp_path, entry("old-box", gpus, 5000.0, "pass"))  # recorded during this run
    ledger.record(tmp_path, entry("me", gpus, 900.0))
    (tmp_path / "broken.json").write_text("not json")
    others, problems = ledger.last_runs_of_other_hosts(tmp_path, "me", before=2000.0)
    assert list(others) == ["old-box"] and others["old-box"].time == 1000.0
    assert len(problems) == 1 and problems[0].startswith(
        f"the GPU ledger {tmp_path / 'broken.json'} is unreadable"
    )


def test_the_hosts_of_a_run_read_the_ledger_directory_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gpus = ledger.identities(real_gpus())
    ledger.record(tmp_path, ledger.new_entry("old-box", gpus, "pass", when=1000.0))
    reads: list[Path] = []
    read = ledger._read_listing
    monkeypatch.setattr(ledger, "_read_listing", lambda d: reads.append(d) or read(d))
    started = time.time()  # the run's steps are built
    for host in ("a", "b", "c"):  # each host reads the others, then records its own run
        others, problems = ledger.last_runs_of_other_hosts(tmp_path, host, started)
        assert (list(others), problems) == (["old-box"], [])
        ledger.record(tmp_path, ledger.new_entry(host, gpus, "pass"))
    assert len(reads) == 1
    # a run started after it reads the directory again and finds the runs the first recorded
    others, _ = ledger.last_runs_of_other_hosts(tmp_path, "d", time.time())
    assert sorted(others) == ["a", "b", "c", "old-box"] and len(reads) == 2


def test_a_rerun_parses_each_hosts_ledger_once_not_once_a_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rerun of two hosts with three runs each: a host's ledger is read by its load, by the
    hosts' listing and by its record (three reads, in the order gpu_identity makes them), and
    each file's text is parsed once (ledger.parse itself, counted); what each read gives is what
    parsing it again gives."""
    gpus = ledger.identities(real_gpus())
    for host in ("a", "b"):
        for i in range(3):
            ledger.record(tmp_path, ledger.new_entry(host, gpus, "pass", when=1000.0 + i))
    parsed: list[str | None] = []
    parse = ledger.parse
    monkeypatch.setattr(
        ledger, "parse", lambda text, path, host=None: parsed.append(host) or parse(text, path, host)
    )
    started = time.time()
    for host in ("a", "b"):
        history = ledger.load(tmp_path, host)
        path = ledger.ledger_path(tmp_path, host)
        assert history == parse(path.read_text(), path, host)[1] and len(history) == 3
        others, problems = ledger.last_runs_of_other_hosts(tmp_path, host, started)
        assert [(h, e.time) for h, e in others.items()] == [("b" if host == "a" else "a", 1002.0)]
        ledger.record(tmp_path, ledger.new_entry(host, gpus, "pass"))
    assert len(parsed) == 2  # (the base: 6, the load and record of each host and the listing's 2)
    assert [len(ledger.load(tmp_path, host)) for host in ("a", "b")] == [4, 4]


def test_parallel_records_of_one_host_lose_no_run(tmp_path: Path) -> None:
    gpus = real_gpus()
    threads = [
        threading.Thread(target=ledger.record, args=(tmp_path, entry("gpu-a", gpus, float(i))))
        for i in range(20)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(ledger.load(tmp_path, "gpu-a")) == 20


def test_the_step_is_registered() -> None:
    assert REGISTRY["gpu_identity"].name == "gpu_identity"


def test_identity_fields_of_a_recorded_gpu() -> None:
    g = GpuIdentity(index=2, serial=None, uuid=None)
    assert not g.identified and g.label() == "no serial or UUID"


def _ctx(tmp_path: Path, host: str, text: str | None, check: bool = True) -> StepContext:
    """A step context over facts parsed from a real capture (None: no nvidia-smi); no connection."""
    raw = {"nvidia_smi": ProbeOutput("", "", 127) if text is None else ProbeOutput("", "", 1)}
    if text is not None:
        raw["nvidia_smi_q"] = ProbeOutput(text, "", 0)
    h = Host(name=host, address="127.0.0.1", order=OrderSpec(gpu_model="H100 80GB", gpu_count=8))
    return StepContext(host=h, runner=None, facts=parse_facts(raw), check=check, project=tmp_path)  # type: ignore[arg-type]


def test_the_step_records_in_check_mode_and_warns_on_the_next_run(tmp_path: Path) -> None:
    text = H100_Q.read_text()
    step = GpuIdentityStep({})
    plan = step.plan(_ctx(tmp_path, "gpu-a", text))
    assert not plan.failed and not plan.changes and plan.checks[0].verdict == "pass"
    assert plan.msg.startswith("GPU identities recorded: recorded 8 GPUs: serials 1650124031592")
    (run,) = ledger.load(tmp_path / ".gpuonboard" / "ledger", "gpu-a")
    # (this real box throttles: gpu_health's rule fails it, and the run records that)
    assert run.check_mode and len(run.gpus) == 8
    assert (run.acceptance, run.failed_rules) == ("fail", ("throttling",))
    swapped = text.replace("1650124032506", NEW_SERIAL).replace(
        "GPU-afe9f2ed-9dd0-572c-3cd8-b42b58b3bc99", NEW_UUID
    )
    again = GpuIdentityStep({}).plan(_ctx(tmp_path, "gpu-a", swapped))
    assert (
        again.checks[0].verdict == "warn"
        and again.checks[0].actual == f"GPU 3: serial 1650124032506 -> {NEW_SERIAL}"
    )
    assert len(ledger.load(tmp_path / ".gpuonboard" / "ledger", "gpu-a")) == 2


def test_the_step_records_a_failed_acceptance_and_fails_the_box_handed_back(tmp_path: Path) -> None:
    text = H100_Q.read_text()
    ctx = _ctx(tmp_path, "old-box", text)
    ctx.host = dataclasses.replace(ctx.host, order=OrderSpec(gpu_count=16))  # the box failed: 8 of 16
    GpuIdentityStep({}).plan(ctx)
    (run,) = ledger.load(tmp_path / ".gpuonboard" / "ledger", "old-box")
    assert run.acceptance == "fail" and "gpu_count" in run.failed_rules
    plan = GpuIdentityStep({}).plan(_ctx(tmp_path, "new-box", text))
    assert plan.failed and plan.checks[0].verdict == "fail"
    assert (
        f"are the GPUs of host old-box, which failed acceptance ({', '.join(run.failed_rules)})" in plan.msg
    )


def test_runs_of_other_hosts_recorded_during_this_run_are_not_a_box_seen_before(tmp_path: Path) -> None:
    text = H100_Q.read_text()
    step = GpuIdentityStep({})  # built when the run starts, as the runner builds every host's steps
    ctx = _ctx(tmp_path, "twin", text)
    ctx.host = dataclasses.replace(ctx.host, order=OrderSpec(gpu_count=16))
    GpuIdentityStep({}).plan(ctx)  # another host of the same run, failed, recorded first
    assert step.plan(_ctx(tmp_path, "me", text)).checks[0].verdict == "pass"


def test_no_gpu_facts_no_rule_and_nothing_recorded(tmp_path: Path) -> None:
    plan = GpuIdentityStep({}).plan(_ctx(tmp_path, "gpu-a", None))
    assert (plan.checks, plan.failed, plan.msg) == ([], False, "no GPU facts: no GPU identity to record")
    assert not (tmp_path / ".gpuonboard" / "ledger").exists()


def test_a_corrupt_ledger_leaves_the_step_unverified_not_crashed(tmp_path: Path) -> None:
    path = ledger.ledger_path(tmp_path / ".gpuonboard" / "ledger", "gpu-a")
    path.parent.mkdir(parents=True)
    path.write_text("[]")
    plan = GpuIdentityStep({}).plan(_ctx(tmp_path, "gpu-a", H100_Q.read_text()))
    assert plan.checks[0].verdict == "unverified" and not plan.failed
    assert f"the GPU ledger {path} is unreadable (it is not a JSON object)" in plan.checks[0].detail
    assert path.read_text() == "[]"
