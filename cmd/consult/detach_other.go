//go:build !unix

package main

import "syscall"

// detachedAttr: this system has no sessions to detach a worker into.
func detachedAttr() *syscall.SysProcAttr { return nil }
