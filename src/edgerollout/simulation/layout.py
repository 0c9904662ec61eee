"""Which node is which: the fleet's nodes named, spread over their pools, and drawn their fates.

Nodes are named `edge-000000` upward. The planner takes nodes in name order, so pools are not
given ranges of names: each node's pool is drawn (a seeded shuffle of the pools' shares), and a
rollout meets the pools mixed, as real node names do. Whether a node is never online, flaps or
crash-loops on the new revision is drawn once per node, in name order, from its own stream, so
that changing one fraction does not move the others' nodes.
"""

import random
from collections.abc import Mapping
from dataclasses import dataclass

from edgerollout.domain.model import NodeName
from edgerollout.simulation.fleet import Fleet


@dataclass(frozen=True, slots=True, kw_only=True)
class Layout:
    """The fleet's nodes: `names[i]`, `pool[i]` (an index into `Fleet.pools`), `members[p]`
    (pool p's nodes, in name order), `labels` (each node's labels, one shared mapping per
    pool), and each node's fate."""

    names: tuple[NodeName, ...]
    pool: tuple[int, ...]
    members: tuple[tuple[int, ...], ...]
    labels: Mapping[NodeName, Mapping[str, str]]
    always_offline: tuple[bool, ...]
    flapping: tuple[bool, ...]
    crashes: tuple[bool, ...]


def stream(seed: int, purpose: str) -> random.Random:
    """The random stream of one purpose (pools, fates, outages, ...) for `seed`: the same seed
    draws the same values, whatever else the fleet changes."""
    # A simulation's draws must repeat from their seed, not be unguessable.
    return random.Random(f"{seed}:{purpose}")  # noqa: S311


def pool_sizes(weights: tuple[float, ...], nodes: int) -> tuple[int, ...]:
    """`nodes` split in proportion to `weights`, largest remainders first (ties: first pool)."""
    total = sum(weights)
    exact = [nodes * weight / total for weight in weights]
    sizes = [int(share) for share in exact]
    by_remainder = sorted(range(len(weights)), key=lambda p: (-(exact[p] - sizes[p]), p))
    for p in by_remainder[: nodes - sum(sizes)]:
        sizes[p] += 1
    return tuple(sizes)


def lay_out(fleet: Fleet) -> Layout:
    """The nodes of `fleet` (see the module docstring)."""
    width = max(6, len(str(max(fleet.nodes - 1, 0))))
    names = tuple(NodeName(f"edge-{i:0{width}d}") for i in range(fleet.nodes))
    sizes = pool_sizes(tuple(pool.weight for pool in fleet.pools), fleet.nodes)
    pool = [p for p, size in enumerate(sizes) for _ in range(size)]
    stream(fleet.seed, "pools").shuffle(pool)
    members: list[list[int]] = [[] for _ in fleet.pools]
    for i, p in enumerate(pool):
        members[p].append(i)
    pool_labels = [{fleet.pool_label: p.name} for p in fleet.pools]
    fates = stream(fleet.seed, "nodes")
    always_offline, flapping, crashes = [], [], []
    for _ in range(fleet.nodes):
        always_offline.append(fates.random() < fleet.always_offline)
        flapping.append(fates.random() < fleet.flapping.fraction)
        crashes.append(fates.random() < fleet.crash_loop)
    return Layout(
        names=names,
        pool=tuple(pool),
        members=tuple(tuple(nodes) for nodes in members),
        labels={name: pool_labels[pool[i]] for i, name in enumerate(names)},
        always_offline=tuple(always_offline),
        flapping=tuple(flapping),
        crashes=tuple(crashes),
    )
