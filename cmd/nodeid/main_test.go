package main

import (
	"testing"

	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// The tests of this package build the command as shipped and run it; the
// commands' own tests are in the packages of internal/.
func TestMain(m *testing.M) { pgtest.Main(m) }
