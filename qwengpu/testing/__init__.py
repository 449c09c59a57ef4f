"""Oracles and fixtures for checking the product, kept out of it: random differential testing of
the toolchain (difftest), a launch's expected token ids for comparing inference engines
(reference), and a synthetic silent circuit for merge tests (circuits)."""
