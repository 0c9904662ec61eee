"""Unit tests of the pure decision core, `edgerollout.domain`."""
