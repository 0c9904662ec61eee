"""Unit tests of the command line's pure parts, `edgerollout.cli`: rendering without a terminal."""
