"""Unit tests (a package, so their module names never clash with tests/integration/)."""
