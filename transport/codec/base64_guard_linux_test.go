package codec

import (
	"encoding/base64"
	"syscall"
	"testing"
)

// TestAppendBase64GuardPage puts the source right before a page that may
// not be read, so that a load past its end faults instead of reading
// whatever follows: the vector loop's 16-byte loads and the word loop's
// 8-byte ones must stop short of it.
func TestAppendBase64GuardPage(t *testing.T) {
	page := syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 2*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatalf("mapping two pages: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Munmap(mem); err != nil {
			t.Errorf("unmapping: %v", err)
		}
	})
	copy(mem, noise(page, 5))
	if err := syscall.Mprotect(mem[page:], syscall.PROT_NONE); err != nil {
		t.Fatalf("protecting the guard page: %v", err)
	}
	for name, simd := range base64Paths() {
		for n := 0; n <= 300; n++ {
			src := mem[page-n : page]
			got := appendBase64Using(nil, src, simd)
			if want := base64.StdEncoding.EncodeToString(src); string(got) != want {
				t.Fatalf("%s, %d bytes: got %s, want %s", name, n, got, want)
			}
		}
	}
}
