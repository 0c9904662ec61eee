"""Prometheus text read into samples, and the difference between two readings.

The API server's `/metrics` (reached with the lab's admin token) counts every request by verb and
resource; the controller's counts its own requests by method; kube-controller-manager's counts
what its DaemonSet controller did (syncs, and syncs skipped because its cache was behind). Taking one reading before and one
after a measured phase and subtracting gives what the phase cost.
"""

from __future__ import annotations

import ssl
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import yaml

from edgerollout.lab.cluster import lab_ports
from edgerollout.lab.control_plane import controller_manager_cert

Labels = tuple[tuple[str, str], ...]
Samples = dict[tuple[str, Labels], float]


def parse(text: str) -> Samples:
    samples: Samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        sample, _, value = line.rpartition(" ")
        name, _, label_part = sample.partition("{")
        labels: list[tuple[str, str]] = []
        for item in _split_labels(label_part.rstrip("}")):
            key, _, raw = item.partition("=")
            labels.append((key, raw.strip('"')))
        try:
            samples[(name, tuple(sorted(labels)))] = float(value)
        except ValueError:
            continue
    return samples


def _split_labels(part: str) -> list[str]:
    """`a="x",b="y,z"` -> ['a="x"', 'b="y,z"'] (commas inside quotes are kept)."""
    items, current, quoted = [], "", False
    for char in part:
        if char == '"':
            quoted = not quoted
        if char == "," and not quoted:
            items.append(current)
            current = ""
        else:
            current += char
    if current:
        items.append(current)
    return items


def total(samples: Samples, name: str, /, **labels: str) -> float:
    """The sum of every sample of `name` whose labels include `labels`."""
    return sum(
        value
        for (sample_name, sample_labels), value in samples.items()
        if sample_name == name and all((k, v) in sample_labels for k, v in labels.items())
    )


def by_label(samples: Samples, name: str, label: str, /, **labels: str) -> dict[str, float]:
    """`name` summed per value of `label` (among samples whose labels include `labels`)."""
    sums: dict[str, float] = {}
    for (sample_name, sample_labels), value in samples.items():
        if sample_name != name or not all((k, v) in sample_labels for k, v in labels.items()):
            continue
        key = dict(sample_labels).get(label, "")
        sums[key] = sums.get(key, 0.0) + value
    return sums


def delta(after: Samples, before: Samples) -> Samples:
    return {key: value - before.get(key, 0.0) for key, value in after.items()}


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where to read metrics from, and with which credentials."""

    url: str
    token: str | None = None
    ca_file: Path | None = None

    @staticmethod
    def apiserver(kubeconfig: Path) -> Endpoint:
        config = yaml.safe_load(kubeconfig.read_text())
        cluster = config["clusters"][0]["cluster"]
        return Endpoint(
            url=f"{cluster['server']}/metrics",
            token=str(config["users"][0]["user"]["token"]),
            ca_file=Path(cluster["certificate-authority"]),
        )

    @staticmethod
    def controller_manager(folder: Path, kubeconfig: Path) -> Endpoint:
        """kube-controller-manager's metrics (its secure port takes the admin's token)."""
        admin = Endpoint.apiserver(kubeconfig)
        port = lab_ports(folder).controller_manager
        return Endpoint(
            url=f"https://127.0.0.1:{port}/metrics",
            token=admin.token,
            ca_file=controller_manager_cert(folder),
        )

    def read(self) -> Samples:
        context = None
        if self.url.startswith("https://"):
            context = ssl.create_default_context(cafile=str(self.ca_file) if self.ca_file else None)
        request = urllib.request.Request(self.url)  # noqa: S310 - loopback URLs of the lab
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        with urllib.request.urlopen(request, timeout=30, context=context) as response:  # noqa: S310
            return parse(response.read().decode())
