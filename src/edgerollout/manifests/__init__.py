"""Kubernetes manifests shipped with edgerollout (read as package data)."""
