"""Inventory: hosts, groups, vendor profiles and order specs, loaded from YAML and validated.

Native layout (`inventory/hosts.yml` + `inventory/vendors/*.yml`)::

    defaults: {user: root}
    groups:
      wuhan: {vars: {vendor: wuhan-idc}, hosts: [wuhan-a100-1]}
    hosts:
      wuhan-a100-1: {address: 203.0.113.10, order: {gpu_model: A100 80GB SXM, gpu_count: 8}}

Precedence for every setting: host > group (in file order, later wins) > vendor profile >
defaults. An Ansible inventory (YAML or INI) is accepted as it is (see `ansible`).

This package module only re-exports what the rest of gpuonboard uses; the modules own:
`model` (the typed Host, Vendor, OrderSpec, Inventory; host selection), `loader` (the hosts
file, format detection, `build`), `fields` (keys, numbers, paths, names, addresses),
`resolve` (one host's layers merged and checked), `order` (order specs), `vendors` (vendor
profiles), `jumps` (jump hosts and chains), `jumphosts` (jump hosts of the SSH config),
`limit` (--limit patterns), `sshlookup` (the user's SSH config as the loader consults it),
`sshresolve` (aliases resolved by OpenSSH's own `ssh -G`), `sshconfig` (the own reader,
without `ssh`), `rules` (names and sizes every format shares), `ansible` (Ansible inventories).
"""

from __future__ import annotations

from gpuonboard.inventory.fields import (
    HOST_CHARS,
    HOST_KEYS,
    ORDER_KEYS,
    TOP_KEYS,
    VENDOR_KEYS,
    bad_host_char,
)
from gpuonboard.inventory.loader import load
from gpuonboard.inventory.model import Billing, DataDiskSpec, Host, Inventory, OrderSpec, Vendor
from gpuonboard.inventory.order import ORDER_FILE, parse_order, parse_rdma
from gpuonboard.inventory.vendors import load_vendor

__all__ = [
    "HOST_CHARS",
    "HOST_KEYS",
    "ORDER_FILE",
    "ORDER_KEYS",
    "TOP_KEYS",
    "VENDOR_KEYS",
    "Billing",
    "DataDiskSpec",
    "Host",
    "Inventory",
    "OrderSpec",
    "Vendor",
    "bad_host_char",
    "load",
    "load_vendor",
    "parse_order",
    "parse_rdma",
]
