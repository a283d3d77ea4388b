"""Gather a host's facts: the core probes (connection/probe_commands.py) plus those steps ask for,
in ONE remote execution, and parse their outputs into Facts."""

from __future__ import annotations

import dataclasses
import functools
import threading
import weakref
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from gpuonboard import shell
from gpuonboard.connection.probe_commands import CORE_NAMES, NVIDIA_SMI_TIMEOUT, TIMED_OUT, core_probes
from gpuonboard.errors import CommandError
from gpuonboard.facts.driver_module import MODULE_FILE_MARK, MODULE_PROBE, split_module_file
from gpuonboard.facts.gpu_probes import WARNING_EXIT
from gpuonboard.facts.nvidia_smi.sniff import UNRECOGNISED
from gpuonboard.facts.nvidia_smi_failure import stopped_said
from gpuonboard.facts.probe import Probe, ProbeOutput, build_script, new_token, split_output

if TYPE_CHECKING:
    from gpuonboard.connection import Runner

    # The parsers (xml.etree, csv, many regexes: ~10 ms of start-up) are imported where they
    # parse, so a run whose playbook needs no hardware facts (core=False) never loads them.
    from gpuonboard.facts import cpu, disks, memory, nvidia_smi, topo
    from gpuonboard.facts.gpu_merge import GpuEvidence


def _silent(out: ProbeOutput) -> bool:
    """An output that exited 0 with nothing on stdout or stderr (a stub, a blocked tool)."""
    return out.exit_code == 0 and not (out.stdout.strip() or out.stderr.strip())


@dataclass(frozen=True)
class Facts:
    """Everything known about one host after the probe, parsed into typed values."""

    raw: Mapping[str, ProbeOutput]
    gpu: nvidia_smi.GpuReport | None
    topology: topo.Topology | None
    cpu: cpu.CpuInfo | None
    memory: memory.MemoryInfo | None
    mounts: tuple[disks.Mount, ...]
    block_devices: tuple[disks.BlockDevice, ...]
    os_release: Mapping[str, str]
    kernel: str | None
    nproc: int | None
    container_runtime: str | None
    warnings: tuple[str, ...] = field(default_factory=tuple)
    # limits of the login's cgroup (a container rental): None when unlimited or unknown
    memory_limit_bytes: int | None = None
    cgroup_cpus: float | None = None
    # the CPUs in the cgroup's CPU set (cpuset.cpus.effective): None where none was read
    cgroup_cpuset: int | None = None
    loop_backing: Mapping[str, str] = field(default_factory=dict)
    # the probes whose output reports never show (Probe.private): a template's own values
    private: frozenset[str] = frozenset()
    # which nvidia-smi formats answered and which the host refused (gpu is their merge)
    gpu_evidence: GpuEvidence | None = None

    @property
    def nvidia_smi_present(self) -> bool:
        """False when nvidia-smi is not installed (no driver): no format of it ran (an `nvlink -s`
        whose GPU lines were read, saved alone, ran it too)."""
        from gpuonboard.facts.gpu_probes import GPU_PROBES

        if any(name in self.raw and not self.raw[name].absent for name in GPU_PROBES):
            return True
        from gpuonboard.facts.gpu_agree import NVLINK_LISTINGS

        ev = self.gpu_evidence
        return ev is not None and any(label in NVLINK_LISTINGS for label in ev.answered)

    def given(self, probe: str) -> bool:
        """The probe ran on the host, or its saved output was among `invoke facts` files
        (parse_facts fills the others in as 'not probed')."""
        out = self.raw.get(probe)
        return out is not None and out.stderr != "not probed"

    def unread_not_a_fault(self) -> str:
        """Why no GPU could be read when that says nothing about the box: the host refuses every
        format that lists GPUs, the output was cut short, or nvidia-smi answered (exit 0) with
        text no GPU is read from (another command's capture, a mangled table). '' when nvidia-smi
        itself failed, hung or is missing (the box's own fault) or GPUs were read. A report whose
        banner gives the driver version answered: a lost GPU's line above rows that could not be
        read (cut off, mangled in a paste) names one GPU, it is no failed nvidia-smi."""
        from gpuonboard.facts.gpu_failed import listed_before, smis_own_failure
        from gpuonboard.facts.gpu_merge import refusal_line
        from gpuonboard.facts.nvidia_smi_failure import answered_unread, nvidia_smi_failure

        if not self.nvidia_smi_present or (self.gpu is not None and self.gpu.gpus):
            return ""
        raw = self.gpu_raw
        words = bool(nvidia_smi_failure(raw.stdout, raw.stderr)[1]) or "NVIDIA-SMI has failed" in raw.stdout
        driver = answered_unread(raw.stdout) if words else None
        failed = raw.exit_code == TIMED_OUT or (words and driver is None)
        own = smis_own_failure(nvidia_smi_failure(raw.stdout, raw.stderr)[0])
        if failed and raw.ran_elsewhere and own and refusal_line(raw) is None:
            # (`podman run ... nvidia-smi -L`, `srun nvidia-smi`: that call's own failure, which
            # may be the container's or the job step's, never certainly the box's driver)
            said = f"{raw.ran_elsewhere}: its failure is that call's own, not certainly the box's"
            return said + listed_before(f"{raw.stdout}\n{raw.stderr}")
        if failed and refusal_line(raw) is None:
            return ""  # a format that was not refused failed with a cause of its own
        ev = self.gpu_evidence
        if ev is not None and ev.refusals:
            return "; ".join(r.sentence() for r in ev.refusals)
        if driver is not None:
            return (
                f"nvidia-smi answered (driver {driver}), but its output was cut short or mangled:"
                " no GPU row could be read"
            )
        if self.gpu is not None and raw.partial.endswith(" let through"):  # (`nvidia-smi | grep Driver`)
            return f"{raw.partial}: no GPU row among them (a filter, not a cut)"
        if self.gpu is not None and not self.gpu.complete:
            return "the nvidia-smi output was cut short"
        if self._answered_nothing():
            return "nvidia-smi answered (exit 0) with nothing"  # (a stub, a blocked tool: no evidence)
        if self.gpu is not None and UNRECOGNISED in self.gpu.warnings:
            # (a text of no nvidia-smi form, a file of prose: nothing shows nvidia-smi answered)
            return "the text given as nvidia-smi's output holds no nvidia-smi form this tool reads"
        if raw.exit_code == 0 and raw.stdout.strip():  # (and no failure words: see above)
            # a listing we read no GPU from (another command's text, a quoted or mangled table)
            # is no evidence about the driver
            return "nvidia-smi answered (exit 0), but no GPU could be read from its output"
        return ""

    def _answered_nothing(self) -> bool:
        """Whether every nvidia-smi format given exited 0 with nothing on stdout or stderr (one
        that failed in words says why no GPU was read)."""
        from gpuonboard.facts.gpu_merge import GPU_SOURCES, LIST_PROBE

        names = (*(n for n, _, _ in GPU_SOURCES), LIST_PROBE)
        given = [out for n in names if (out := self.raw.get(n)) is not None and not out.absent]
        return bool(given) and all(map(_silent, given))

    @property
    def gpu_raw(self) -> ProbeOutput:
        """The nvidia-smi output that says why no GPU could be read: the richest format's,
        passing over a format the host refused (its words are in gpu_evidence.refusals) and one
        that answered nothing at exit 0 where another said something."""
        from gpuonboard.facts.gpu_merge import GPU_SOURCES, refusal_line

        given = [
            out
            for name, _, _ in GPU_SOURCES
            if (out := self.raw.get(name)) is not None and not out.absent and refusal_line(out) is None
        ]
        said = [o for o in given if not _silent(o)]
        return (said or given or [self.raw["nvidia_smi"]])[0]

    def summary(self) -> dict[str, object]:
        """A small JSON-able digest for reports."""
        interconnect = None
        if self.topology:
            from gpuonboard.facts import topo

            interconnect = topo.interconnect(self.topology)
        return {
            # (no GPU report: nvidia-smi failed or is missing: the count is unknown, never 0)
            "gpu_count": len(self.gpu.gpus) if self.gpu else None,
            "gpu_model": self.gpu.gpus[0].name if self.gpu and self.gpu.gpus else None,
            "driver_version": self.gpu.driver_version if self.gpu else None,
            "cuda_version": self.gpu.cuda_version if self.gpu else None,
            "interconnect": interconnect,
            "cpu_cores": self.cpu.physical_cores if self.cpu else None,
            "logical_cpus": self.cpu.logical_cpus if self.cpu else None,
            "ram_bytes": self.memory.total_bytes if self.memory else None,
            "os": self.os_release.get("PRETTY_NAME"),
            "kernel": self.kernel,
            "container_runtime": self.container_runtime,
            # which nvidia-smi formats the facts came from, and those the host refused
            "nvidia_smi_formats": list(self.gpu_evidence.answered) if self.gpu_evidence else [],
            "nvidia_smi_refused": [r.sentence() for r in self.gpu_evidence.refusals]
            if self.gpu_evidence
            else [],
            # what the formats say otherwise of the box, each value with its format
            "nvidia_smi_disagree": list(self.gpu.disagreements) if self.gpu else [],
            # every GPU's identity (a swapped GPU, a box handed back: steps/identity.py)
            "gpus": [
                {
                    "index": g.index,
                    "name": g.name,
                    "serial": g.serial,
                    "uuid": g.uuid,
                    "board_part_number": g.board_part_number,
                    "pci_bus_id": g.pci_bus_id,
                }
                for g in (self.gpu.gpus if self.gpu else ())
            ],
        }


T = TypeVar("T")
# per Facts object (by id, while it lives): what memo() computed from it, by key
_MEMO: dict[int, tuple[weakref.ref[Facts], dict[Hashable, Any]]] = {}
_MEMO_LOCK = threading.Lock()


def memo(facts: Facts, key: Hashable, compute: Callable[[], T]) -> T:
    """compute(), once per Facts object and key: for rules that several steps of a host run
    over the same facts (gpu_identity records the acceptance and health verdicts that those
    steps computed just before). The value is shared: keep it immutable (a tuple)."""
    try:
        hash(key)
    except TypeError:  # (a key of unhashable args: computed each time)
        return compute()
    ident = id(facts)
    with _MEMO_LOCK:
        entry = _MEMO.get(ident)
        if entry is not None and entry[0]() is facts and key in entry[1]:
            cached: T = entry[1][key]
            return cached
    value = compute()
    with _MEMO_LOCK:
        entry = _MEMO.get(ident)
        if entry is None or entry[0]() is not facts:
            entry = (weakref.ref(facts, functools.partial(_forget, ident)), {})
            _MEMO[ident] = entry
        entry[1][key] = value
    return value


def _forget(ident: int, ref: weakref.ref[Facts]) -> None:
    with _MEMO_LOCK:
        entry = _MEMO.get(ident)
        if entry is not None and entry[0] is ref:
            del _MEMO[ident]


def gather(
    runner: Runner,
    extra: Sequence[Probe] = (),
    timeout: float = 120,
    core: bool = True,
    prefetch: bool = False,
) -> Facts:
    """Run the ONE batched probe on the host and parse its outputs.

    `core=False` runs only the steps' own probes (a playbook that needs no hardware facts).
    """
    base = list(core_probes()) if core else []
    probes = base + [p for p in extra if p.name not in {c.name for c in base}]
    if not probes:  # (a playbook whose steps need no facts: nothing to run)
        return parse_facts({})
    token = new_token()
    result = runner.run(shell.sh_c(build_script(probes, token)), timeout=timeout, prefetch=prefetch)
    if token not in result.stdout:
        detail = (result.stderr.strip() or f"exit code {result.exit_code}").splitlines()[0]
        raise CommandError(f"host {runner.host.name}: the fact probe could not run ({detail}).")
    raw = split_output(result.stdout, result.stderr, token, [p.name for p in probes])
    return dataclasses.replace(parse_facts(raw), private=frozenset(p.name for p in probes if p.private))


def _df_in_part(out: ProbeOutput) -> ProbeOutput:
    """GNU df prints every filesystem it could read and exits 1 when one could not be read (a
    stale NFS or FUSE mount: `df: /mnt/s3: Transport endpoint is not connected`): its rows are
    read, as a listing of only some filesystems (a mount not among them is unknown, not missing)."""
    if out.exit_code != 1 or not out.stdout.strip() or out.partial:
        return out
    said = f"df could not read every filesystem ({out.failure(stdout=False)})"
    return dataclasses.replace(out, exit_code=0, partial=said, exited=out.exit_code)


def _answered_with_warning(out: ProbeOutput) -> ProbeOutput:
    """An nvidia-smi output whose exit code is its warning (14: a corrupted infoROM) beside a
    whole answer: read as answered, as the same output saved to a file is (its warning line a
    fault of the GPU it names: sensor_faults), the code kept in `exited`. Any other code keeps
    its failure: `-L`, `topo -m`, `nvlink` and the compute apps are read only when answered."""
    from gpuonboard.facts.nvidia_smi.faults import without_inforom_lines

    if out.exit_code != WARNING_EXIT or not without_inforom_lines(out.stdout).strip():
        return out  # (the warning and nothing else: no answer to read)
    return dataclasses.replace(out, exit_code=0, exited=out.exit_code)


# nvidia-smi(1), RETURN VALUE: the codes of a fault of a GPU itself, 8 "A device's external power
# cables are not properly attached", 10 "NVIDIA Kernel detected an interrupt issue with a GPU", 15
# "The GPU has fallen off the bus or has otherwise become inaccessible"
_GPU_FAULT_EXITS = (8, 10, 15)


def _failed_answer(out: ProbeOutput, args: str) -> ProbeOutput:
    """A GPU listing printed by an nvidia-smi call that then failed (exit 15, a GPU fallen off the
    bus; 6, 255 ...; 124, stopped by the probe's timeout) and names no GPU it could not open: a
    listing nvidia-smi itself says is not whole, so a GPU missing from it is not known missing
    (`partial`, which the GPU merge reads as a cut: each row read a GPU, more may follow). A lost
    GPU's own line ("Unable to determine the device handle for GPU ...") explains the code, as
    does, for a code of a GPU's fault (8, 10, 15), a GPU the listing shows with faults (`ERR!`,
    `[Unknown Error]`, `GPU requires reset`): read as whole."""
    from gpuonboard.facts.gpu_unopened import unopened_gpus
    from gpuonboard.facts.nvidia_smi import parse_any

    if out.exit_code in (0, 127) or out.partial or not out.stdout.strip():
        return out
    # (its failure's own words alone, `Failed to initialize NVML: ...`, list no GPU: a failure)
    gpus = parse_any(out.stdout).gpus
    if unopened_gpus([out.stdout, out.stderr]) or not gpus:
        return out
    if out.exit_code in _GPU_FAULT_EXITS and any(g.faults or g.cell_faults for g in gpus):
        return out
    call = f"`nvidia-smi {args}`" if args.startswith("-") else "`nvidia-smi`"
    how = (
        f"was stopped after {NVIDIA_SMI_TIMEOUT} s"
        if out.exit_code == TIMED_OUT
        else stopped_said(out.exit_code) or f"failed ({out.failure(stdout=False)})"
    )
    said = f"{call} {how}: what it printed before may leave GPUs out"
    return dataclasses.replace(out, partial=said)


def _failed_listing(out: ProbeOutput) -> ProbeOutput:
    """`nvidia-smi -L` that failed after listing GPUs (a lost GPU's own line, "Unable to determine
    the device handle for gpu ADDR: Unknown Error", then the GPUs it could open): its GPU lines
    read, as the same output saved to a file is (each GPU listed, the lost one unreadable), the
    code kept in `exited`; a listing not whole (`partial`) unless a lost GPU's line explains the
    code (never a timeout's or a signal's: a stop is partial either way). A failure that lists
    no GPU (`Failed to initialize NVML: ...`) stays a failure."""
    from gpuonboard.facts.gpu_list import parse_gpu_list
    from gpuonboard.facts.gpu_unopened import unopened_gpus

    if out.exit_code in (0, 127) or out.partial or not parse_gpu_list(out.stdout).gpus:
        return out
    read = dataclasses.replace(out, exit_code=0, exited=out.exit_code)
    stop = (
        f"was stopped after {NVIDIA_SMI_TIMEOUT} s"
        if out.exit_code == TIMED_OUT
        else stopped_said(out.exit_code)
    )
    if not stop and unopened_gpus([out.stdout, out.stderr]):
        return read  # a stop cuts the listing short wherever it was, a lost GPU's line or not
    how = stop or f"failed ({out.failure(stdout=False)})"
    return dataclasses.replace(
        read, partial=f"`nvidia-smi -L` {how}: what it printed before may leave GPUs out"
    )


def _read_past_exit(raw: dict[str, ProbeOutput]) -> list[str]:
    """Each output whose non-zero exit code leaves its answer readable, as answered (df's rows,
    nvidia-smi's warning), or as a part of the answer (a GPU listing whose call failed after
    it): `raw` changed in place; a sentence for each nvidia-smi one read as answered."""
    from gpuonboard.facts.gpu_probes import GPU_SOURCES, LIST_PROBE, NVIDIA_SMI_ARGS

    raw["df"] = _df_in_part(raw["df"])
    listings = {name for name, _, _ in GPU_SOURCES}
    read = []
    for name, args in NVIDIA_SMI_ARGS.items():
        out = raw[name]
        raw[name] = _answered_with_warning(out)
        if raw[name] is not out:
            named = args.startswith(("-", "topo", "nvlink"))
            read.append(f"`nvidia-smi {args}`" if named else "`nvidia-smi`")
        elif name in listings:
            raw[name] = _failed_answer(out, args)
        elif name == LIST_PROBE:
            raw[name] = _failed_listing(out)
    if not read:
        return []
    return [
        f"{', '.join(read)} exited 14, nvidia-smi's code for a corrupted infoROM (a warning beside a"
        " whole answer): read as answered"
    ]


def _ok(raw: Mapping[str, ProbeOutput], name: str) -> str | None:
    out = raw.get(name)
    return out.stdout if out is not None and out.exit_code == 0 and out.stdout.strip() else None


def _read_gpus(
    raw: Mapping[str, ProbeOutput], warnings: list[str]
) -> tuple[nvidia_smi.GpuReport | None, GpuEvidence | None]:
    """parse_facts's GPUs: every nvidia-smi format that answered, merged (the report and the
    evidence of where each field came from); their warnings are added to `warnings`."""
    gpu = evidence = None
    from gpuonboard.facts.gpu_merge import NVLINK_PROBES
    from gpuonboard.facts.gpu_probes import GPU_PROBES

    if any(_some(raw, name) for name in (*GPU_PROBES, *NVLINK_PROBES)):
        from gpuonboard.facts import gpu_merge, nvidia_smi
        from gpuonboard.facts.gpu_list import parse_gpu_list

        evidence = gpu_merge.merge(raw, nvidia_smi.parse_any, parse_gpu_list)
        gpu = evidence.report
        answered = (
            text
            for name, _, _ in gpu_merge.GPU_SOURCES
            if (text := _ok(raw, name)) and gpu_merge.refusal_line(raw[name]) is None
        )
        if gpu is None and (text := next(answered, None)):
            gpu = nvidia_smi.parse_any(text)  # a format answered, but listed no GPU: say why
        warnings += list(gpu.warnings) if gpu else []
        warnings += [r.sentence() for r in evidence.refusals]
    return gpu, evidence


def _mount_table_apart(raw: dict[str, ProbeOutput]) -> None:
    """The kernel's mount table the df probe printed after its rows (df_command) as the output
    `mounts` of its own, df's rows alone in `df`; a mount table's options (a saved `cat
    /proc/mounts` read offline: a share's `username=`, `domain=`) dropped, so that no report
    writes them. `raw` changed in place."""
    from gpuonboard.facts import mount_table

    df = raw["df"]
    rows, table = mount_table.split_df_mount_table(df.stdout)
    if table is not None:
        raw["df"] = dataclasses.replace(df, stdout=rows)
        raw["mounts"] = ProbeOutput(table, "", 0)
    if (out := raw.get("mounts")) is not None and out.stdout:
        raw["mounts"] = dataclasses.replace(out, stdout=mount_table.mount_table_fields(out.stdout))


def _module_file_apart(raw: dict[str, ProbeOutput]) -> None:
    """The module file the table probe printed after nvidia-smi's failed answer (MODULE_READ) as
    the output MODULE_PROBE of its own, as a saved one is read offline; the table probe's answer
    alone in `nvidia_smi_table`. `raw` changed in place."""
    table = raw["nvidia_smi_table"]
    answer, module = split_module_file(table.stdout)
    if module is not None:
        raw["nvidia_smi_table"] = dataclasses.replace(table, stdout=answer)
    if module and module.strip():  # (no file, no module loaded: nothing read, nothing said)
        raw.setdefault(MODULE_PROBE, ProbeOutput(module, "", 0))


def parse_facts(raw: Mapping[str, ProbeOutput]) -> Facts:
    """Pure: raw probe outputs -> Facts (missing tools become None, never an exception)."""
    # each parser module is imported only when there is output for it to parse
    warnings: list[str] = []
    raw = {**{name: ProbeOutput("", "not probed", 127) for name in CORE_NAMES}, **raw}
    if raw["df"].stdout or "mounts" in raw:
        _mount_table_apart(raw)
    if MODULE_FILE_MARK in raw["nvidia_smi_table"].stdout:
        _module_file_apart(raw)
    warnings += _read_past_exit(raw)
    cpu_info = mem = None
    gpu, evidence = _read_gpus(raw, warnings)
    topology = _read_topology(raw)
    nproc = None
    if nproc_text := _ok(raw, "nproc"):
        from gpuonboard.facts import cpu

        nproc = cpu.parse_nproc(nproc_text)  # (a number without nproc's newline may be cut: None)
    if cpu_text := _ok(raw, "lscpu"):
        from gpuonboard.facts import cpu

        cpu_info = (
            cpu.parse_cpuinfo(cpu_text, nproc)
            if cpu.looks_like_cpuinfo(cpu_text)
            else cpu.parse_lscpu(cpu_text)
        )
    if free_text := _ok(raw, "free"):
        from gpuonboard.facts import memory

        mem = memory.read_memory(free_text)
    elif raw["free"].stderr == "not probed" and (numactl_text := _ok(raw, "numactl")):
        # (offline: a saved `numactl -H`, and no free given)
        from gpuonboard.facts import memory

        mem = memory.read_numactl_memory(numactl_text)
    elif raw["free"].stderr == "not probed" and _ok(raw, "docker_info"):
        # (offline: a saved `docker info` of the box's own native Linux daemon, and no free given:
        # m37b 28; its name or kernel the box's other outputs show, revT F1)
        from gpuonboard.facts.docker_memory import read_docker_memory

        mem = read_docker_memory(raw)
    mounts, block = _read_disks(raw)
    memory_limit = cgroup_cpus = cgroup_cpuset = None
    if limits_text := _ok(raw, "cgroup_limits"):
        from gpuonboard.facts import cpu, cpu_cgroup, memory

        memory_limit = memory.parse_cgroup_memory_limit(limits_text)
        cgroup_cpus = cpu_cgroup.parse_cgroup_cpu_limit(limits_text)
        cgroup_cpuset = cpu_cgroup.parse_cgroup_cpuset(limits_text)
    loops: dict[str, str] = {}
    if loop_text := _ok(raw, "loop_backing"):
        from gpuonboard.facts import disks

        loops = disks.parse_loop_backing(loop_text)
    return Facts(
        raw=raw,
        gpu=gpu,
        topology=topology,
        cpu=cpu_info,
        memory=mem,
        mounts=tuple(mounts),
        block_devices=tuple(block),
        os_release=parse_os_release(_ok(raw, "os_release") or ""),
        kernel=(_ok(raw, "kernel") or "").strip() or None,
        nproc=nproc,
        container_runtime=_first_line(_ok(raw, "container_runtime")),
        warnings=tuple(warnings),
        memory_limit_bytes=memory_limit,
        cgroup_cpus=cgroup_cpus,
        cgroup_cpuset=cgroup_cpuset,
        loop_backing=loops,
        gpu_evidence=evidence,
    )


def _read_topology(raw: Mapping[str, ProbeOutput]) -> topo.Topology | None:
    """parse_facts's `nvidia-smi topo -m` (None where it gave none)."""
    if not (topo_text := _ok(raw, "nvidia_topo")):
        return None
    from gpuonboard.facts import topo

    topology = topo.parse_topo(topo_text)
    if (out := raw["nvidia_topo"]).pcie_paths_only:  # (offline: `$ nvidia-smi topo -mp`)
        topology = dataclasses.replace(topology, pcie_only=out.partial or topo.PCIE_PATHS_ONLY)
    elif (
        out.nvlink_matrix
        and not out.partial
        and (not topology.pcie_only or topology.pcie_only.startswith(topo.NO_LEGEND))
    ):  # (offline: `$ nvidia-smi topo -m`)
        # the command is `-m`: a legend saved with no NV# line is a `-mp`'s (the line above it
        # pasted wrong) or one cut short, unknown; where none was saved, the legend was cut
        # away after the matrix and takes nothing from it (a whole matrix of PCIe paths is a
        # box without NVLink, as with its legend)
        topology = dataclasses.replace(topology, shows_nvlink=True, pcie_only="")
    return topology


def _read_disks(
    raw: Mapping[str, ProbeOutput],
) -> tuple[Sequence[disks.Mount], Sequence[disks.BlockDevice]]:
    """parse_facts's mounts (df's, each file system type from the mount table where df gave
    none) and block devices (lsblk's)."""
    mounts: Sequence[disks.Mount] = ()
    block: Sequence[disks.BlockDevice] = ()
    df_text, lsblk_text = _ok(raw, "df"), _ok(raw, "lsblk")
    if df_text or lsblk_text:
        from gpuonboard.facts import disks, mount_table

        mounts = disks.parse_df(df_text) if df_text else ()
        from gpuonboard.facts.lsblk_table import read_lsblk

        block = read_lsblk(lsblk_text) if lsblk_text else ()
        if any(m.fstype is None for m in mounts) and (table := _ok(raw, "mounts")):
            mounts = mount_table.with_mount_types(mounts, mount_table.parse_mount_table(table))
    return mounts, block


def _some(raw: Mapping[str, ProbeOutput], name: str) -> bool:
    """The probe printed something (its exit code aside: a format may answer and still fail)."""
    out = raw.get(name)
    return out is not None and bool(out.stdout.strip() or out.stderr.strip()) and not out.absent


def _first_line(text: str | None) -> str | None:
    lines = (text or "").strip().splitlines()
    return lines[0].strip() if lines else None


def parse_os_release(text: str) -> dict[str, str]:
    """/etc/os-release KEY=value lines, quotes removed."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, eq, value = line.partition("=")
        if eq and key.strip() and not key.startswith("#"):
            out[key.strip()] = value.strip().strip('"').strip("'")
    return out
