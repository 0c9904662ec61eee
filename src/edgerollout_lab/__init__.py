"""The development lab: a local Kubernetes control plane with simulated edge nodes, and the demo.

Development only: the tests, the benchmark and `./dev demo` use it; the product (`edgerollout`)
never imports it, and neither its wheel nor its image contains it.
"""
