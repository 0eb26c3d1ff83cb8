//go:build unix

package consultation

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/consultmcp/consult/internal/testkit/fake"
)

// TestHeldLedgerLockFailsTheCall: while another process holds the spend ledger's lock, a
// call under a daily budget fails within its own deadline (not at it), naming the lock, and
// sends nothing.
func TestHeldLedgerLockFailsTheCall(t *testing.T) {
	t.Parallel()
	srv, svc := upstream(t, 0)
	srv.SetModels(fake.Model{ID: flavors[0].model, Context: 1_048_576, MaxOutput: 1_000})
	led := ledger(t)
	if _, err := led.AddSpend(context.Background(), time.Now(), 0.01); err != nil {
		t.Fatal(err)
	}
	lock, err := os.OpenFile(filepath.Join(led.Dir(), ".spend.lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	svc.Ledger, svc.DailyBudgetUSD = led, 5
	res := svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t), Timeout: 20 * time.Second}), nil)
	info := summaryOf(t, res).Error
	if !res.IsError || info.Class != ClassInternal || !strings.Contains(res.Text(), ".spend.lock") || !strings.Contains(res.Text(), "held by another process") {
		t.Errorf("a call under a held ledger lock: %+v\n%s", info, res.Text())
	}
	if n := len(generations(srv)); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}
