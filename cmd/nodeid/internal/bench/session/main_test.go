package session

import (
	"testing"

	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
