"""The levels at which a GPU's numbers count as a job's, shared by the foreign-processes rule
(steps/checks/gpu_health/usage.py) and the offline reading of a saved session's two nvidia-smi
outputs around a state change (api/state_change.py: an earlier output of a GPU in use keeps the
two apart). One place, so the two never judge one GPU differently."""

from __future__ import annotations

# "Busy" from the numbers alone (when no process list can be read, or the list is empty while
# the GPU works: processes of other containers / VMs are invisible in nvidia-smi's list).
# Utilisation: an idle GPU reads 0 % (every idle capture under tests/fixtures/real); 10 % leaves
# room for a monitoring sample. Memory used: idle GPUs in the real captures hold 0-50 MiB (H100,
# H200, A100, RTX 4090; older drivers count a few hundred MiB of reserved memory as used, and a
# desktop session ~400 MiB); more than 1 GiB is some process's allocations. An absolute floor,
# not a share of total, so that 2 GiB taken on a 141 GiB H200 still counts.
BUSY_UTIL_PCT = 10
BUSY_MEMORY_MIB = 1024
# Memory "held" by no job: at most what an idle GPU of the real captures holds (0-50 MiB on
# current drivers); a CUDA context alone takes more, so utilisation beside no more than this
# is no job's (usage.py _utilisation_alone).
IDLE_HELD_MIB = 50
