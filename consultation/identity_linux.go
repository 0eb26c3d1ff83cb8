package consultation

import (
	"bytes"
	"os"
	"strconv"
)

// processStart returns the start time of process pid as Linux counts it (field 22 of
// /proc/PID/stat, in clock ticks since boot), 0 when it cannot be read. With the pid it
// names one process for the life of the system: a reused pid has another start time.
func processStart(pid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// Field 2, the command name, is in parentheses and may hold spaces or ')': the fields
	// after it start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	fields := bytes.Fields(b[i+1:])
	const startField = 22 - 3 // fields[0] is field 3
	if len(fields) <= startField {
		return 0
	}
	n, err := strconv.ParseUint(string(fields[startField]), 10, 64)
	if err != nil {
		return 0
	}
	return n
}
