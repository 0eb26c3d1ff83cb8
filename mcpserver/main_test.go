package mcpserver

import (
	"flag"
	"os"
	"testing"

	"github.com/consultmcp/consult/internal/testrun"
)

func TestMain(m *testing.M) {
	flag.Parse()
	testrun.SetParallel()
	os.Exit(m.Run())
}
