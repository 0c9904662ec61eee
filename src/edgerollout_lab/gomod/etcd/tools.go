//go:build tools

// Package tools pins the etcd server module so that `go build` of its main package is reproducible.
package tools

import _ "go.etcd.io/etcd/server/v3"
