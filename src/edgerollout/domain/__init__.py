"""The decisions of edgerollout, as pure functions of plain data.

Which pods to delete now, which condition a pod should carry, how a max-unavailable string becomes
a number: everything here is computed from frozen views of Kubernetes objects and a `now` passed
in. Nothing here does I/O, reads a clock, or imports from the rest of edgerollout but its
stand-alone `settings` (import-linter contracts keep it that way), so every rule of the product
can be tested in microseconds and replayed from a log.

`plan` (in `reconcile`) is the entry point the controller calls, with a `Snapshot` of what its
caches show; the modules it combines are usable on their own (the agent, for one, needs
`conditions` and `revisions`).
"""
