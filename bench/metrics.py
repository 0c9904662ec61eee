"""Prometheus text read into samples, and the difference between two readings.

The API server's `/metrics` (reached with the lab's admin token) counts every request by verb and
resource; the controller's counts its own requests by method; kube-controller-manager's counts
what its DaemonSet controller did (syncs, and syncs skipped because its cache was behind). Taking
one reading before and one after a measured phase and subtracting gives what the phase cost.
"""

from __future__ import annotations

import ssl
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from edgerollout_lab.cluster import lab_ports
from edgerollout_lab.control_plane import controller_manager_cert
from edgerollout_lab.kubeconfig import read_kubeconfig

Labels = tuple[tuple[str, str], ...]
Samples = dict[tuple[str, Labels], float]


def parse(text: str) -> Samples:
    """Every sample of a Prometheus text exposition, by sample name and sorted labels.

    prometheus_client's parser names a counter's samples with `_total` even where the exporter
    left the suffix off (some of the API server's older counters do)."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


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


def histogram_quantile(samples: Samples, name: str, share: float) -> float | None:
    """The `share` quantile of histogram `name` (its `_bucket` samples, summed over other
    labels), interpolated linearly within a bucket as Prometheus's `histogram_quantile` does;
    None without observations."""
    cumulative: dict[float, float] = {}
    for (sample_name, sample_labels), value in samples.items():
        if sample_name == f"{name}_bucket":
            bound = float(dict(sample_labels)["le"])
            cumulative[bound] = cumulative.get(bound, 0.0) + value
    bounds = sorted(cumulative)
    if not bounds or cumulative[bounds[-1]] <= 0:
        return None
    rank = share * cumulative[bounds[-1]]
    lower, below = 0.0, 0.0
    for bound in bounds:
        count = cumulative[bound]
        if count >= rank:
            if bound == float("inf"):
                return lower
            return lower + (bound - lower) * (rank - below) / (count - below or 1.0)
        lower, below = bound, count
    return lower


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
        admin = read_kubeconfig(kubeconfig)
        return Endpoint(url=f"{admin.server}/metrics", token=admin.token, ca_file=admin.ca_file)

    @staticmethod
    def controller_manager(folder: Path, token: str | None) -> Endpoint:
        """kube-controller-manager's metrics (its secure port takes the admin's token)."""
        port = lab_ports(folder).controller_manager
        return Endpoint(
            url=f"https://127.0.0.1:{port}/metrics",
            token=token,
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
