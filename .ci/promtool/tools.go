//go:build tools

// Package promtool pins the promtool that checks and unit-tests cairn's
// alert rules (deploy/monitoring), built from github.com/prometheus/prometheus
// through the Go module proxy (`make .cache/bin/promtool`).
package promtool

import _ "github.com/prometheus/prometheus/cmd/promtool"
