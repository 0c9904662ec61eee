"""`python -m bench` (`./dev bench`): run the benchmark scenarios on fresh labs and report.

Scenarios 1-4 share one lab of `--nodes` nodes (native and edgerollout side by side, one after the
other, and OpenYurt's yurt-manager as a third with `--peer openyurt`); the memory scenario (5) and
the agent scenario (6) and the pod mix (8) get a lab each, sized for what they measure. The
dashboard's page (9) runs only when asked (`--scenario dashboard`): it needs headless Chromium. Results go to `OUT/NAME.json` with PNG plots beside it; the table is printed at the end.
"""

from __future__ import annotations

import asyncio
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from bench import peer, plots, report, workload
from bench.machine import lab_rss_mb, load_now, machine, source_commit
from bench.scenarios import agent, dashboard, disconnected, footprint, mix, ota, rolling, slow_link
from bench.session import lab_session
from edgerollout_lab import browser
from edgerollout_lab.kwok_stages import (
    MIN_NODE_LEASE_SECONDS,
    NODE_LEASE_SECONDS,
    PRODUCTION_NODE_LEASE_SECONDS,
)
from edgerollout_lab.link import parse_rate

SCENARIOS = (
    "rolling",
    "ota",
    "disconnected",
    "footprint",
    "agent",
    "slow-link",
    "mix",
    "dashboard",
)
# What runs without --scenario: all but the dashboard's page, which needs a browser.
DEFAULT_SCENARIOS = tuple(name for name in SCENARIOS if name != "dashboard")
PEERS = (peer.NAME,)
RESULTS = Path(__file__).parent / "results"


def _say(message: str) -> None:
    stamp = datetime.now(UTC).strftime("%H:%M:%S")
    click.echo(f"[{stamp}] {message}", err=True)


async def _big_lab(options: dict[str, Any], chosen: list[str], results: dict[str, Any]) -> None:
    nodes, timeout = options["nodes"], options["timeout"]
    with_peer = options["peer"] is not None
    async with lab_session(
        nodes=nodes,
        say=_say,
        profile=options["profile"],
        keep_logs=options["keep_logs"],
        node_lease_seconds=options["node_lease_seconds"],
        fleet=options["fleet"],
    ) as session:
        results["lab"] = {
            "nodes": nodes,
            "fleet": options["fleet"],
            "rss_mb_idle": lab_rss_mb(session.folder),
        }
        _say(f"preparing the native{', OpenYurt' if with_peer else ''} and edgerollout DaemonSets")
        await rolling.prepare(
            session,
            nodes=nodes,
            timeout=timeout,
            with_peer=with_peer,
            percent=options["max_unavailable"],
        )
        controller = await session.controller(namespace=workload.OURS_NAMESPACE)
        results["lab"]["controller_ready_seconds"] = round(controller.ready_seconds, 2)
        scenarios = results["scenarios"]
        if "rolling" in chosen:
            scenarios.update(
                await rolling.run(
                    session,
                    controller,
                    nodes=nodes,
                    rounds=options["rounds"],
                    timeout=timeout,
                    with_peer=with_peer,
                    percent=options["max_unavailable"],
                )
            )
        if "ota" in chosen:
            scenarios["ota"] = await ota.run(session, controller, nodes=nodes, timeout=timeout)
            if with_peer:
                scenarios["ota"][peer.NAME] = await ota.run_peer(
                    session, nodes=nodes, timeout=timeout
                )
        if "disconnected" in chosen:
            rolled = scenarios.get("rolling")
            scenarios["disconnected"] = await disconnected.run(
                session,
                nodes=nodes,
                rolling_seconds=rolled["edgerollout"]["seconds"] if rolled else None,
                wave_seconds=rolled["lab"]["wave_seconds"] if rolled else None,
                native_seconds=options["native_stall_seconds"],
                timeout=timeout,
            )
            if with_peer:
                scenarios["disconnected"][peer.NAME] = await disconnected.run_peer(
                    session, nodes=nodes, timeout=timeout
                )
        results["lab"]["rss_mb_after"] = lab_rss_mb(session.folder)


async def _footprint(options: dict[str, Any], results: dict[str, Any]) -> None:
    async with lab_session(nodes=1, say=_say) as session:
        results["scenarios"]["footprint"] = await footprint.run(
            session, sizes=options["footprint_sizes"], timeout=options["timeout"]
        )


async def _mix(options: dict[str, Any], results: dict[str, Any]) -> None:
    async with lab_session(nodes=1, say=_say) as session:
        results["scenarios"]["mix"] = await mix.run(
            session,
            nodes=options["mix_nodes"],
            churn_rate=options["mix_churn_rate"],
            churn_seconds=options["mix_churn_seconds"],
            opted_in_only=options["mix_opted_in_only"],
            timeout=options["timeout"],
        )


async def _dashboard(options: dict[str, Any], results: dict[str, Any]) -> None:
    browser.ensure_installed(_say)
    async with lab_session(nodes=1, say=_say, fleet=True) as session:
        results["scenarios"]["dashboard"] = await dashboard.run(
            session, nodes=options["dashboard_nodes"], timeout=options["timeout"]
        )


async def _agent(options: dict[str, Any], results: dict[str, Any]) -> None:
    async with lab_session(nodes=1, say=_say, agents=True) as session:
        controller = await session.controller(namespace=workload.AGENT_NAMESPACE)
        results["scenarios"]["agent"] = await agent.run(
            session,
            controller,
            seconds=options["agent_seconds"],
            upgrades=options["upgrades"],
            timeout=options["timeout"],
        )


async def _slow_link(options: dict[str, Any], results: dict[str, Any]) -> None:
    payload, rate = options["slow_link_payload_mb"] << 20, options["slow_link_rate"]
    async with lab_session(
        nodes=1,
        say=_say,
        agents=True,
        real_nodes=1,
        payload_bytes=payload,
        link_rate=rate,
        keep_logs=options["keep_logs"],
    ) as session:
        toolbox = session.lab.toolbox_image
        controller = await session.controller(
            namespace=slow_link.NAMESPACE, extra=(f"--prepull-toolbox-image={toolbox}",)
        )
        results["scenarios"]["slow-link"] = await slow_link.run(
            session, controller, payload_bytes=payload, link_rate=rate, timeout=options["timeout"]
        )


async def _run(options: dict[str, Any], chosen: list[str]) -> dict[str, Any]:
    results: dict[str, Any] = {
        "name": options["name"],
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "commit": source_commit(),
        "options": {k: v for k, v in options.items() if k not in ("out", "profile", "keep_logs")},
        "scenarios": {},
    }
    started = time.monotonic()
    if {"rolling", "ota", "disconnected"} & set(chosen):
        await _big_lab(options, chosen, results)
    if "footprint" in chosen:
        await _footprint(options, results)
    if "agent" in chosen:
        await _agent(options, results)
    if "slow-link" in chosen:
        await _slow_link(options, results)
    if "mix" in chosen:
        await _mix(options, results)
    if "dashboard" in chosen:
        await _dashboard(options, results)
    results["seconds"] = round(time.monotonic() - started, 1)
    results["load_average_1m_at_end"] = load_now()
    return results


def _peer_built() -> None:
    """Stop before any lab starts if the peer is not built: its build (about 4 minutes cold, on
    2 cores) is a step of its own, as in the tests, not something a benchmark run does unasked."""
    why = peer.missing()
    if why is not None:
        raise click.UsageError(why)


def _sizes(_: click.Context, __: click.Parameter, value: str | None) -> list[int] | None:
    if value is None:
        return None
    try:
        sizes = [int(part) for part in value.split(",") if part.strip()]
    except ValueError:
        raise click.BadParameter(f"expected numbers separated by commas, got {value!r}") from None
    if not sizes or any(size < 0 for size in sizes):
        raise click.BadParameter(f"expected non-negative numbers, got {value!r}")
    return sizes


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--scenario",
    "scenarios",
    type=click.Choice(SCENARIOS),
    multiple=True,
    help="Run only these (repeatable). rolling also yields the API-load scenario. Default: all "
    "but dashboard.",
)
@click.option("--nodes", type=click.IntRange(min=10), default=1000, show_default=True)
@click.option(
    "--footprint-sizes",
    callback=_sizes,
    default=None,
    help="Node counts for the memory scenario.  [default: 0,1000,5000,10000; smoke: 0,50,200]",
)
@click.option(
    "--native-stall-seconds",
    type=click.FloatRange(min=1),
    default=None,
    help="How long the native rollout is watched with nodes disconnected.  [default: 300; smoke: 10]",
)
@click.option(
    "--agent-seconds",
    type=click.FloatRange(min=0.5),
    default=None,
    help="Duration of the agent's GET /pods load.  [default: 30; smoke: 2]",
)
@click.option("--upgrades", type=click.IntRange(min=1), default=None, help="[default: 5; smoke: 1]")
@click.option(
    "--mix-nodes",
    type=click.IntRange(min=1),
    default=None,
    help="Scenario 8: nodes of the pod mix (30 pods each).  [default: 1000; smoke: 20]",
)
@click.option(
    "--mix-churn-rate",
    type=click.FloatRange(min=1),
    default=None,
    help="Scenario 8: status patches a second to the Deployment's pods.  [default: 1000; smoke: 50]",
)
@click.option(
    "--mix-churn-seconds",
    type=click.FloatRange(min=1),
    default=None,
    help="Scenario 8: how long the churn lasts.  [default: 30; smoke: 2]",
)
@click.option(
    "--mix-opted-in-only",
    is_flag=True,
    help="Scenario 8: only the opted-in DaemonSets' pods (all of 30 per node the controller is "
    "sent), no Deployment and no churn: its footprint at a size whose other pods the lab cannot hold.",
)
@click.option(
    "--dashboard-nodes",
    type=click.IntRange(min=10),
    default=None,
    help="Scenario 9: the nodes of the rollout the dashboard's page draws.  [default: 10000; "
    "smoke: 200]",
)
@click.option(
    "--slow-link-payload-mb",
    type=click.IntRange(min=1),
    default=None,
    help="Scenario 7: the payload layer of each image, in MiB.  [default: 50; smoke: 2]",
)
@click.option(
    "--slow-link-rate",
    default=None,
    help="Scenario 7: the real node's link rate (lab link-rate syntax).  [default: 2MB/s; smoke: 1MB/s]",
)
@click.option(
    "--rounds",
    type=click.IntRange(min=1),
    default=None,
    help="Rounds of scenario 1, each rolling out every DaemonSet, in alternating order (with "
    "the peer the three take turns: a multiple of 3 puts each in each place as often): one "
    "round's ratio varies by about a tenth from run to run.  [default: 4; smoke: 2]",
)
@click.option(
    "--smoke",
    is_flag=True,
    help="The small version (50 nodes, short waits) that checks the suite still works.",
)
@click.option(
    "--peer",
    type=click.Choice(PEERS),
    default=None,
    help="Also run OpenYurt's yurt-manager in scenarios 1-4, in the same lab and rounds "
    "(built by `./dev lab build --peer openyurt`, not by this command).",
)
@click.option("--name", default=None, help="Results name.  [default: latest; smoke: smoke]")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=RESULTS,
    show_default=True,
    help="Where NAME.json and the plots go.",
)
@click.option("--timeout", type=click.FloatRange(min=10), default=900, show_default=True)
@click.option(
    "--node-lease-seconds",
    type=click.IntRange(min=MIN_NODE_LEASE_SECONDS),
    default=None,
    help="The Lease duration of the lab of scenarios 1-4 (lab up --node-lease-seconds): a "
    "production kubelet's by default, so that the idle lab leaves the rollouts most of the "
    f"machine; {NODE_LEASE_SECONDS}, the test lab's, shows a cut link within seconds but costs "
    f"the idle lab two to three times the CPU (see docs/benchmarks.md).  [default: {PRODUCTION_NODE_LEASE_SECONDS}; "
    f"smoke: {NODE_LEASE_SECONDS}]",
)
@click.option(
    "--max-unavailable",
    type=click.IntRange(min=1, max=100),
    default=10,
    show_default=True,
    help="Scenarios 1-3: the DaemonSets' max-unavailable, in percent of the nodes.",
)
@click.option(
    "--fleet",
    is_flag=True,
    help="Scenarios 1-4 on a fleet lab (lab up --fleet: hour-long Leases, cut nodes marked by "
    "the lab; design §11.10), for 10,000 nodes.",
)
@click.option("--markdown", is_flag=True, help="Print the table as Markdown.")
@click.option(
    "--profile",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Record the controller of scenarios 1-4 with py-spy into this folder (speedscope JSON).",
)
@click.option(
    "--keep-logs",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Copy the controller's log and the API server's audit log of pod deletions of scenarios 1-4 and 7 into this folder.",
)
def main(
    scenarios: tuple[str, ...],
    nodes: int,
    footprint_sizes: list[int] | None,
    native_stall_seconds: float | None,
    agent_seconds: float | None,
    upgrades: int | None,
    mix_nodes: int | None,
    mix_churn_rate: float | None,
    mix_churn_seconds: float | None,
    mix_opted_in_only: bool,
    dashboard_nodes: int | None,
    slow_link_payload_mb: int | None,
    slow_link_rate: str | None,
    rounds: int | None,
    smoke: bool,
    peer: str | None,
    name: str | None,
    out: Path,
    timeout: float,
    node_lease_seconds: int | None,
    max_unavailable: int,
    fleet: bool,
    markdown: bool,
    profile: Path | None,
    keep_logs: Path | None,
) -> None:
    """Benchmark edgerollout against the native DaemonSet controller on the local lab."""
    if peer is not None:
        _peer_built()
    if smoke and nodes == 1000:
        nodes = 50
    try:
        rate = parse_rate(slow_link_rate or ("1MB/s" if smoke else "2MB/s"))
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--slow-link-rate") from None
    if rate is None:
        raise click.BadParameter("scenario 7 needs a limited rate", param_hint="--slow-link-rate")
    options: dict[str, Any] = {
        "nodes": nodes,
        "smoke": smoke,
        "name": name or ("smoke" if smoke else "latest"),
        "footprint_sizes": footprint_sizes or ([0, 50, 200] if smoke else [0, 1000, 5000, 10000]),
        "native_stall_seconds": native_stall_seconds or (10.0 if smoke else 300.0),
        "agent_seconds": agent_seconds or (2.0 if smoke else 30.0),
        "upgrades": upgrades or (1 if smoke else 5),
        "mix_nodes": mix_nodes or (20 if smoke else 1000),
        "mix_churn_rate": mix_churn_rate or (50.0 if smoke else 1000.0),
        "mix_churn_seconds": mix_churn_seconds or (2.0 if smoke else 30.0),
        "mix_opted_in_only": mix_opted_in_only,
        "dashboard_nodes": dashboard_nodes or (200 if smoke else 10000),
        "slow_link_payload_mb": slow_link_payload_mb or (2 if smoke else 50),
        "slow_link_rate": rate,
        "timeout": timeout,
        "rounds": rounds or (2 if smoke else 4),
        "peer": peer,
        "node_lease_seconds": node_lease_seconds
        or (NODE_LEASE_SECONDS if smoke else PRODUCTION_NODE_LEASE_SECONDS),
        "max_unavailable": max_unavailable,
        "fleet": fleet,
        "out": out,
        "profile": profile,
        "keep_logs": keep_logs,
    }
    chosen = list(scenarios) or list(DEFAULT_SCENARIOS)
    results = asyncio.run(_run(options, chosen))
    path = report.write(results, out, options["name"])
    images = plots.write_all(results, out, options["name"])
    click.echo(report.render(report.rows(results), markdown=markdown, head=report.header(results)))
    click.echo(f"\nresults: {path}")
    for image in images:
        click.echo(f"plot: {image}")


if __name__ == "__main__":
    sys.exit(main())
