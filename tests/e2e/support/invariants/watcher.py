"""The invariant watcher: a history that records itself, judged when the run is over."""

from __future__ import annotations

from pathlib import Path

from kubernetes_asyncio import client

from tests.e2e.support.invariants import judge, report
from tests.e2e.support.invariants.history import History
from tests.e2e.support.invariants.recorder import Recorder


class InvariantWatcher(History):
    """Watch one namespace's rollout and the Nodes; `violations()` judges what was recorded."""

    def __init__(
        self,
        core: client.CoreV1Api,
        apps: client.AppsV1Api,
        namespace: str,
        *,
        daemonset: str,
        selector: str,
        nodes: list[str],
        audit_log: Path,
        controller_user: str = "lab-admin",
        grace: float = 1.0,
    ) -> None:
        super().__init__(namespace, nodes=nodes, controller_user=controller_user)
        self.grace = grace
        self.recorder = Recorder(
            self, core, apps, daemonset=daemonset, selector=selector, audit_log=audit_log
        )

    async def start(self) -> None:
        """List everything once (the first recorded state), then follow each kind."""
        await self.recorder.start()

    async def stop(self) -> None:
        """Read what is left of the audit log, then stop every watch."""
        await self.recorder.stop()

    def violations(self, *, budget: int, min_ready_seconds: float) -> list[judge.Violation]:
        return judge.violations(
            self, budget=budget, min_ready_seconds=min_ready_seconds, grace=self.grace
        )

    def peak_unavailable(self, min_ready_seconds: float) -> tuple[int, float, tuple[str, ...]]:
        """The most Ready nodes unavailable at once (for any reason) over the recorded run:
        how many, from when, which."""
        return report.peak_unavailable(self, min_ready_seconds)

    def held_then_replaced(self) -> tuple[int, list[float]]:
        """How many pods carried a hold in force, and for each the controller deleted, the
        seconds from the end of its hold to its deletion."""
        return report.held_then_replaced(self)

    def timeline(self) -> str:
        """Deletions, node readiness and pod lives, for a failure message."""
        return report.timeline_text(self)
