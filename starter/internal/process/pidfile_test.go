package process

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
)

// deadPID returns the pid of a process that has already exited and been
// reaped: the test binary itself, asked to run no tests. One is enough for
// the whole run (a race-enabled binary is slow to start).
func deadPID(t *testing.T) int {
	t.Helper()
	pid, err := reapedPID()
	if err != nil {
		t.Fatalf("run helper: %v", err)
	}
	return pid
}

var reapedPID = sync.OnceValues(func() (int, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		return 0, err
	}
	return cmd.ProcessState.Pid(), nil
})

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestProbe(t *testing.T) {
	dir := t.TempDir()
	dead := deadPID(t)
	tests := []struct {
		name    string
		content *string
		want    State
	}{
		{name: "missing file", content: nil, want: State{}},
		{name: "current process", content: ptr(strconv.Itoa(os.Getpid()) + "\n"), want: State{Running: true, PID: os.Getpid()}},
		{name: "no newline", content: ptr(strconv.Itoa(os.Getpid())), want: State{Running: true, PID: os.Getpid()}},
		{name: "non-numeric", content: ptr("abc\n"), want: State{}},
		{name: "empty", content: ptr(""), want: State{}},
		{name: "negative", content: ptr("-5"), want: State{}},
		{name: "zero", content: ptr("0"), want: State{}},
		{name: "dead process", content: ptr(strconv.Itoa(dead)), want: State{PID: dead}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strconv.Itoa(i)+".pid")
			if tt.content != nil {
				writeFile(t, path, *tt.content)
			}
			if got := Probe(path); got != tt.want {
				t.Fatalf("Probe = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func ptr(s string) *string { return &s }

func TestReadPIDErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadPID(filepath.Join(dir, "missing")); !errors.Is(err, ErrNoPID) {
		t.Fatalf("missing: err = %v, want ErrNoPID", err)
	}
	bad := filepath.Join(dir, "bad")
	writeFile(t, bad, "12x")
	if _, err := ReadPID(bad); !errors.Is(err, ErrNoPID) {
		t.Fatalf("garbage: err = %v, want ErrNoPID", err)
	}
}

func TestIsRunning(t *testing.T) {
	if !IsRunning(os.Getpid()) {
		t.Error("current process reported dead")
	}
	if IsRunning(deadPID(t)) {
		t.Error("reaped process reported alive")
	}
	if IsRunning(0) || IsRunning(-1) {
		t.Error("non-positive pid reported alive")
	}
}

func TestWritePID(t *testing.T) {
	t.Run("creates folders and file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "run", "edge-agent.pid")
		if err := WritePID(path, 4242); err != nil {
			t.Fatal(err)
		}
		got, err := ReadPID(path)
		if err != nil || got != 4242 {
			t.Fatalf("ReadPID = %d, %v", got, err)
		}
		entries, _ := os.ReadDir(filepath.Dir(path))
		if len(entries) != 1 {
			t.Fatalf("temporary files left behind: %v", entries)
		}
	})
	t.Run("live owner refused", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "edge-agent.pid")
		writeFile(t, path, strconv.Itoa(os.Getpid()))
		err := WritePID(path, os.Getpid()+100000)
		var re *RunningError
		if !errors.As(err, &re) || re.PID != os.Getpid() || re.Path != path {
			t.Fatalf("err = %v, want RunningError for the current pid", err)
		}
		if got, _ := ReadPID(path); got != os.Getpid() {
			t.Fatalf("pid file overwritten: %d", got)
		}
	})
	t.Run("same pid is fine", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "edge-agent.pid")
		writeFile(t, path, strconv.Itoa(os.Getpid()))
		if err := WritePID(path, os.Getpid()); err != nil {
			t.Fatal(err)
		}
	})
	for name, content := range map[string]string{
		"stale dead pid": strconv.Itoa(deadPID(t)),
		"garbage":        "not a pid",
		"empty":          "",
	} {
		t.Run(name+" replaced", func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "edge-agent.pid")
			writeFile(t, path, content)
			if err := WritePID(path, 777); err != nil {
				t.Fatal(err)
			}
			if got, _ := ReadPID(path); got != 777 {
				t.Fatalf("pid = %d, want 777", got)
			}
		})
	}
}

func TestRemovePID(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "edge-agent.pid")
	writeFile(t, path, "123")
	if err := RemovePID(path, 456); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal("pid file of another process removed")
	}
	if err := RemovePID(path, 123); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("pid file still there: %v", err)
	}
	if err := RemovePID(path, 123); err != nil {
		t.Fatalf("second remove: %v", err)
	}
}

func TestNotify(t *testing.T) {
	if err := Notify("", "READY=1"); err != nil {
		t.Fatalf("no socket: %v", err)
	}
	// Unix socket paths are limited to ~108 bytes; TempDir names can be long.
	dir, err := os.MkdirTemp("", "sdn")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "n.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := Notify(sock, "READY=1"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(buf[:n]); got != "READY=1" {
		t.Fatalf("datagram = %q", got)
	}
	if err := Notify(filepath.Join(dir, "missing.sock"), "READY=1"); err == nil {
		t.Fatal("want error for a missing socket")
	}
}

func TestIsRunningZombie(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	// Not waited for yet: once it exits it stays a zombie until Wait.
	deadline := time.Now().Add(10 * time.Second)
	for IsRunning(pid) {
		if time.Now().After(deadline) {
			t.Fatal("exited child still reported running (zombie not detected)")
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = cmd.Wait()
}

// A pid file whose pid now belongs to another program (pid reuse after a
// reboot or kill -9) is stale: not running, and replaced by WritePID.
func TestPIDOfAnotherProgram(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("program identity is checked on Linux only")
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	cmd := exec.Command(sleep, "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	pid := cmd.Process.Pid
	path := filepath.Join(t.TempDir(), "edge-agent.pid")
	writeFile(t, path, strconv.Itoa(pid))
	if !IsRunning(pid) {
		t.Fatal("sleep not running")
	}
	if st := Probe(path); st.Running {
		t.Fatalf("Probe = %+v: a stranger's pid counted as the agent", st)
	}
	if err := WritePID(path, 4242); err != nil {
		t.Fatalf("WritePID over a stranger's pid: %v", err)
	}
	if got, _ := ReadPID(path); got != 4242 {
		t.Fatalf("pid = %d", got)
	}
}
