package proc

import (
	"os"
	"testing"
)

func TestReadSelf(t *testing.T) {
	s, err := Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if s.CPUSeconds < 0 || s.RSSBytes <= 0 || s.HWMBytes < s.RSSBytes {
		t.Fatalf("implausible sample of this process: %+v", s)
	}
	if _, err := Read(-1); err == nil {
		t.Fatal("a process that cannot exist was read")
	}
}

func TestField(t *testing.T) {
	text := []byte("Name:\tx\nVmRSS:\t  1234 kB\nVmHWM:\tjunk kB\n")
	for name, want := range map[string]int64{"VmRSS:": 1234, "VmHWM:": -1, "VmSwap:": -1} {
		if got := field(text, name); got != want {
			t.Errorf("field %s = %d, want %d", name, got, want)
		}
	}
}
