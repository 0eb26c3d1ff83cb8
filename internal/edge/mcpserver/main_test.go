package mcpserver

import (
	"os"
	"testing"

	"github.com/consultmcp/consult/internal/testkit/testrun"
)

func TestMain(m *testing.M) { os.Exit(testrun.Run(m)) }
