"""`edgerollout simulate`: a what-if rollout over a simulated fleet, decided by the real planner.

`fleet` reads a fleet file's values, `layout` names and places the nodes, `engine` plays the
world event by event and asks `domain.planning.reconcile.plan` what to delete, and `outcome`
holds what it found. Nothing here reads a file, a cluster or a clock: the command line does
(`cli.simulate_command`). See docs/simulation.md.
"""
