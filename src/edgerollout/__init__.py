"""edgerollout: DaemonSet upgrades for Kubernetes edge nodes."""
