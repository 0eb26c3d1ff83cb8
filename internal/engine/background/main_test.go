package background

import (
	"os"
	"testing"

	"github.com/consultmcp/consult/internal/testkit/testrun"
)

// TestMain runs the tests testrun.Parallel at a time: they wait on fakes and workers rather
// than compute.
func TestMain(m *testing.M) { os.Exit(testrun.Run(m)) }
