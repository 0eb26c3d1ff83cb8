//go:build unix

package main

import "syscall"

// detachedAttr starts a worker in a session (and process group) of its own: signals a
// client sends to the server or to the server's group, and the hang-up of its terminal, do
// not reach it.
func detachedAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
