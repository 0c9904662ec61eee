"""A real Prometheus beside the lab, from Debian's `prometheus` package, and its `promtool`.

The alert rules (deploy/prometheus/edgerollout-rules.yaml) are unit-tested with `promtool test
rules`, and end to end by this Prometheus: it scrapes the lab's controller and agents and evaluates
the same rules, as one installed next to a cluster would. The package (Prometheus 2.42 and promtool
in Debian 12) is installed on first use, as the lab's other optional packages are (`packages`).

Targets are labelled as the rules expect: job="edgerollout-controller" for the controller,
job="edgerollout-agent" for the agents. An agent's /metrics, like every route of its node API but
the health probes, wants that node's own bearer token, so each agent is a scrape job of its own
(one `credentials_file` per job) whose `job` label is rewritten to the shared one.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from edgerollout_lab import packages
from edgerollout_lab.control_plane import free_port

# The package's one file each tool needs (it holds both programs).
PROMTOOL = Path("/usr/bin/promtool")
PROMETHEUS = Path("/usr/bin/prometheus")
PACKAGES = {"prometheus": str(PROMTOOL)}
CONTROLLER_JOB = "edgerollout-controller"
AGENT_JOB = "edgerollout-agent"
HOST = "127.0.0.1"
STOP_GRACE = 10.0
LOG_TAIL_CHARS = 3000

JSON = dict[str, Any]


def ensure_installed(say: Callable[[str], None]) -> None:
    """Install Debian's `prometheus` package unless it is; PackageError says why it cannot be."""
    packages.ensure(PACKAGES, purpose="Prometheus and promtool (the alert rules' tests)", say=say)


@dataclass(frozen=True, slots=True)
class AgentTarget:
    """One agent to scrape: its node, its address (HOST:PORT) and the file holding its token."""

    node: str
    address: str
    token_file: Path


def scrape_config(
    *,
    controllers: Sequence[str],
    agents: Sequence[AgentTarget],
    rule_files: Sequence[Path],
    interval: str,
) -> JSON:
    """The configuration of a Prometheus scraping the controllers (HOST:PORT each) and agents
    every `interval`, and evaluating `rule_files` as often."""
    controller: JSON = {"job_name": CONTROLLER_JOB, "static_configs": [{"targets": [*controllers]}]}
    jobs = [controller] + [
        {
            "job_name": f"{AGENT_JOB}-{agent.node}",
            "authorization": {"credentials_file": str(agent.token_file)},
            "static_configs": [{"targets": [agent.address], "labels": {"node": agent.node}}],
            "relabel_configs": [{"target_label": "job", "replacement": AGENT_JOB}],
        }
        for agent in agents
    ]
    return {
        "global": {
            "scrape_interval": interval,
            "scrape_timeout": interval,
            "evaluation_interval": interval,
        },
        "rule_files": [str(path) for path in rule_files],
        "scrape_configs": jobs,
    }


def with_waits(rules: JSON, wait: str) -> JSON:
    """`rules` (a rule file's document) with every alert's `for:` set to `wait`, all else kept:
    an alert then fires as its rule says, without waiting the minutes an operator's would."""
    return {
        **rules,
        "groups": [
            {
                **group,
                "rules": [
                    {**rule, "for": wait} if "alert" in rule else rule for rule in group["rules"]
                ],
            }
            for group in rules["groups"]
        ],
    }


@dataclass
class PrometheusProcess:
    """One running Prometheus: its process, log and HTTP API."""

    process: subprocess.Popen[bytes]
    log: Path
    url: str

    def get(self, path: str, **query: str) -> Any:
        """The `data` of an answer of the HTTP API (GET `path` with `query`)."""
        address = f"{self.url}{path}?{urllib.parse.urlencode(query)}"
        with urllib.request.urlopen(address, timeout=5) as response:  # noqa: S310 - loopback
            answer = json.loads(response.read())
        if answer.get("status") != "success":
            raise RuntimeError(f"Prometheus answered {answer} to {address}")
        return answer["data"]

    def query(self, expr: str) -> list[JSON]:
        """The instant vector `expr` evaluates to now."""
        result: list[JSON] = self.get("/api/v1/query", query=expr)["result"]
        return result

    def alerts(self) -> list[JSON]:
        """The alerts pending or firing now."""
        alerts: list[JSON] = self.get("/api/v1/alerts")["alerts"]
        return alerts

    def targets(self) -> list[JSON]:
        """The targets being scraped, with their health."""
        targets: list[JSON] = self.get("/api/v1/targets", state="active")["activeTargets"]
        return targets

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-LOG_TAIL_CHARS:]

    def wait_ready(self, timeout: float = 30) -> None:
        """Wait until /-/ready answers 200; RuntimeError if it exits first, TimeoutError if not
        ready in time (both with the end of its log)."""
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"prometheus exited ({self.process.returncode}):\n{self.log_tail()}"
                )
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as answer,  # noqa: S310
            ):
                if answer.status == 200:
                    return
            if time.monotonic() > deadline:
                raise TimeoutError(f"prometheus not ready within {timeout} s:\n{self.log_tail()}")
            time.sleep(0.2)

    def stop(self) -> int:
        """SIGTERM, then SIGKILL after `STOP_GRACE` seconds; its exit code."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=STOP_GRACE)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        return int(self.process.returncode)


@contextlib.contextmanager
def running(folder: Path, config: JSON, rules: Mapping[str, JSON]) -> Iterator[PrometheusProcess]:
    """Prometheus with `config` and the rule files `rules` (file name → document) written into
    `folder`, its data and log there too, ready; stopped when the block ends, whatever happened.
    `config`'s rule files are named relative to `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, document in rules.items():
        (folder / name).write_text(yaml.safe_dump(document, sort_keys=False))
    config_file = folder / "prometheus.yml"
    config_file.write_text(yaml.safe_dump(config, sort_keys=False))
    port = free_port()
    log = folder / "prometheus.log"
    argv = [
        str(PROMETHEUS),
        f"--config.file={config_file}",
        f"--storage.tsdb.path={folder / 'data'}",
        f"--web.listen-address={HOST}:{port}",
    ]
    with log.open("ab") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=folder)
    handle = PrometheusProcess(process=process, log=log, url=f"http://{HOST}:{port}")
    try:
        handle.wait_ready()
        yield handle
    finally:
        handle.stop()
