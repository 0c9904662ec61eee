//go:build tools

// Package tools pins OpenYurt's yurt-manager so that `go build` of it is reproducible: the
// replace block is OpenYurt v1.5.1's own, since a replace applies only in the main module.
package tools

import _ "github.com/openyurtio/openyurt/cmd/yurt-manager"
