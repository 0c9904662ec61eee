"""Unit tests of the lab's building blocks, `edgerollout_lab`: no Kubernetes, no Go binaries."""
