package main

import (
	"testing"

	"github.com/cairn-dev/cairn/testbed"
)

// TestMain shares one control plane between the package's tests that
// need no more (testbed.Shared), each in namespaces of its own.
func TestMain(m *testing.M) { testbed.Main(m) }
