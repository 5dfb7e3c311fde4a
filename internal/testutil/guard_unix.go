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

// GuardedRows returns room for rows rows of cols float32 laid out one
// row per page, and the stride of that layout (a page of float32): row i
// is data[i*stride : i*stride+cols]. The page of every row i with
// hide(i) true is inaccessible, as are the pages before the first row
// and after the last, so reading or writing a hidden row crashes the
// test (or panics, under debug.SetPanicOnFault). cols must fit in a page.
// The memory is freed when the test ends.
func GuardedRows(t testing.TB, rows, cols int, hide func(i int) bool) (data []float32, stride int) {
	t.Helper()
	page := os.Getpagesize()
	stride = page / 4
	if cols > stride {
		t.Fatalf("GuardedRows: %d columns do not fit in a page of %d floats", cols, stride)
	}
	mem, err := syscall.Mmap(-1, 0, (rows+2)*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	t.Cleanup(func() { syscall.Munmap(mem) })
	protect := func(p int) {
		if err := syscall.Mprotect(mem[p*page:(p+1)*page], syscall.PROT_NONE); err != nil {
			t.Fatalf("mprotect: %v", err)
		}
	}
	protect(0)
	protect(rows + 1)
	for i := range rows {
		if hide(i) {
			protect(i + 1)
		}
	}
	if rows == 0 {
		return unsafe.Slice((*float32)(unsafe.Pointer(&mem[page])), 0), stride
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&mem[page])), (rows-1)*stride+cols), stride
}

// Mapped returns n float32 of a new private mapping, which the system
// backs with pages only where it is written: every page is written once
// if written is true, none otherwise. The memory is freed when the test
// ends.
func Mapped(t testing.TB, n int, written bool) []float32 {
	t.Helper()
	mem, err := syscall.Mmap(-1, 0, max(4*n, 1), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	t.Cleanup(func() { syscall.Munmap(mem) })
	if written {
		for i := 0; i < len(mem); i += os.Getpagesize() {
			mem[i] = 0
		}
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(mem))), n)
}
