//go:build !unix

package results

import "sync"

// ledgerMu serialises additions within this process where there is no flock: servers in
// other processes may then race, and an addition can be lost.
var ledgerMu sync.Mutex

// lockFile serialises additions to the ledger within the process; see ledgerMu.
func lockFile(string) (func(), error) {
	ledgerMu.Lock()
	return ledgerMu.Unlock, nil
}
