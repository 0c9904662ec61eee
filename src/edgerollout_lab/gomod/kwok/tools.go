//go:build tools

// Package tools pins the kwok module so that `go build` of its command is reproducible.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
