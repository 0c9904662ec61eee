//go:build tools

// Package tools pins the helm module so that `go build` of its command is reproducible.
package tools

import _ "helm.sh/helm/v4/cmd/helm"
