"""Unit tests of the lab's building blocks, `edgerollout.lab`: no Kubernetes, no Go binaries."""
