//go:build unix

package testutil

import (
	"os"
	"syscall"
	"testing"
	"unsafe"
)

// GuardSupported reports whether guard-page buffers are available here.
const GuardSupported = true

// Guarded returns a slice of n float32 that ends exactly at an inaccessible
// page (after = true) or starts exactly after one (after = false), so a
// kernel that reads or writes one element beyond the slice faults and the
// test crashes. The memory is freed when the test ends.
func Guarded(t testing.TB, n int, after bool) []float32 {
	t.Helper()
	page := os.Getpagesize()
	dataPages := (4*n + page - 1) / page
	if dataPages == 0 {
		dataPages = 1
	}
	size := (dataPages + 2) * page
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	t.Cleanup(func() { syscall.Munmap(mem) })
	// Guard pages on both sides of the data pages.
	if err := syscall.Mprotect(mem[:page], syscall.PROT_NONE); err != nil {
		t.Fatalf("mprotect: %v", err)
	}
	if err := syscall.Mprotect(mem[size-page:], syscall.PROT_NONE); err != nil {
		t.Fatalf("mprotect: %v", err)
	}
	var start int
	if after {
		start = size - page - 4*n
	} else {
		start = page
	}
	if n == 0 {
		return unsafe.Slice((*float32)(unsafe.Pointer(&mem[start])), 0)
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&mem[start])), n)
}
