"""Pure parsers for the output forms of ``nvidia-smi`` (XML, CSV query, table, ``-q`` text).

No I/O here: the probe collects text, these functions turn it into a :class:`GpuReport`.
A form that is not recognised yields a report with empty fields and a warning, never an
exception and never a guess.

Modules, each over the ones before it: `model` (GpuProcess, GpuInfo, GpuReport), `values`
(shared value parsing: 'no value' spellings, units, On/Off, P-states), `reasons` (clock event
reasons), `faults` (what nvidia-smi prints for a value it cannot read, and whose fault it is),
one module per form: `xml_q` (`-q -x`), `query_csv` (`--query-gpu`, QUERY_FIELDS), `table` (the
plain table), `text_q` (`-q`; its layout read into a tree by `text_tree`), and `sniff`
(parse_any: which form a text is). The merge of several forms with each field's provenance is
`facts.gpu_merge`'s. This module re-exports the names callers import from
`gpuonboard.facts.nvidia_smi` (also, outside `__all__`, FAULT_WORDS and the fault screen and XML
lookup that tests/unit/test_speed_caches.py reads from here).
"""

from __future__ import annotations

from gpuonboard.facts.nvidia_smi.faults import _ANY_FAULT as _ANY_FAULT
from gpuonboard.facts.nvidia_smi.faults import FAULT_WORDS as FAULT_WORDS
from gpuonboard.facts.nvidia_smi.faults import _field_faults as _field_faults
from gpuonboard.facts.nvidia_smi.faults import _may_fault as _may_fault
from gpuonboard.facts.nvidia_smi.model import GpuInfo, GpuProcess, GpuReport
from gpuonboard.facts.nvidia_smi.query_csv import QUERY_FIELDS, parse_query_csv
from gpuonboard.facts.nvidia_smi.reasons import CLOCK_EVENT_REASONS
from gpuonboard.facts.nvidia_smi.sniff import parse_any
from gpuonboard.facts.nvidia_smi.table import parse_table
from gpuonboard.facts.nvidia_smi.text_q import parse_text_q
from gpuonboard.facts.nvidia_smi.xml_q import _xml_find as _xml_find
from gpuonboard.facts.nvidia_smi.xml_q import parse_xml

__all__ = [
    "CLOCK_EVENT_REASONS",
    "QUERY_FIELDS",
    "GpuInfo",
    "GpuProcess",
    "GpuReport",
    "parse_any",
    "parse_query_csv",
    "parse_table",
    "parse_text_q",
    "parse_xml",
]
