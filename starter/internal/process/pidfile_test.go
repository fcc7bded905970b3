package process

import (
	"bufio"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A file nobody holds is "not running" whatever pid it names, the current
// process's included: only the lock says an agent lives.
func TestProbeWithoutHolder(t *testing.T) {
	dir := t.TempDir()
	for i, tc := range []struct {
		content *string
		want    State
	}{
		{nil, State{}},
		{ptr(strconv.Itoa(os.Getpid()) + "\n"), State{PID: os.Getpid()}},
		{ptr("abc\n"), State{}},
		{ptr(""), State{}},
		{ptr("-5"), State{}},
	} {
		path := filepath.Join(dir, strconv.Itoa(i)+".pid")
		if tc.content != nil {
			writeFile(t, path, *tc.content)
		}
		got, err := Probe(path)
		if err != nil || got != tc.want {
			t.Errorf("Probe(%v) = %+v, %v; want %+v", tc.content, got, err, tc.want)
		}
	}
}

func ptr(s string) *string { return &s }

func TestAcquireProbeRelease(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run", "edge-agent.pid")
	l, err := AcquirePID(path, 4242)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := Probe(path); err != nil || st != (State{Running: true, PID: 4242}) {
		t.Fatalf("Probe while held = %+v, %v", st, err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("pid file mode: %v, %v", fi, err)
	}
	// A second agent is refused and learns the holder's pid; the file is
	// left as it was.
	_, err = AcquirePID(path, 777)
	var re *RunningError
	if !errors.As(err, &re) || re.PID != 4242 || re.Path != path {
		t.Fatalf("second AcquirePID = %v, want RunningError naming 4242", err)
	}
	if got, _ := ReadPID(path); got != 4242 {
		t.Fatalf("pid file overwritten: %d", got)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("pid file left after Release: %v", err)
	}
	if st, err := Probe(path); err != nil || st.Running {
		t.Fatalf("Probe after Release = %+v, %v", st, err)
	}
}

// A file left by an agent that died (its lock died with it) is taken
// over, whatever it holds: a live pid of a stranger, garbage, nothing.
func TestAcquireTakesOverAnUnheldFile(t *testing.T) {
	for name, content := range map[string]string{
		"live stranger's pid": strconv.Itoa(os.Getppid()),
		"garbage":             "not a pid",
		"empty":               "",
		"longer than ours":    "123456789012345\n",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "edge-agent.pid")
			writeFile(t, path, content)
			l, err := AcquirePID(path, 777)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release()
			b, _ := os.ReadFile(path)
			if string(b) != "777\n" {
				t.Fatalf("pid file = %q, want %q", b, "777\n")
			}
		})
	}
}

// The lock ends with its holder, however it ends: a child that takes the
// lock and is then killed leaves a file that reads as not running.
func TestLockDiesWithItsProcess(t *testing.T) {
	if os.Getenv("EDGE_AGENT_PIDLOCK_CHILD") != "" {
		if _, err := AcquirePID(os.Getenv("EDGE_AGENT_PIDLOCK_CHILD"), os.Getpid()); err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("locked\n")
		time.Sleep(10 * time.Minute) // until the parent kills it
	}
	path := filepath.Join(t.TempDir(), "edge-agent.pid")
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockDiesWithItsProcess$")
	if emu := os.Getenv("EDGE_AGENT_TEST_EMULATOR"); emu != "" {
		// make test-cross: no binfmt handler starts this binary itself.
		cmd = exec.Command(emu, os.Args[0], "-test.run=^TestLockDiesWithItsProcess$")
	}
	cmd.Env = append(os.Environ(), "EDGE_AGENT_PIDLOCK_CHILD="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("child said %q, %v", line, err)
	}
	if st, err := Probe(path); err != nil || st != (State{Running: true, PID: cmd.Process.Pid}) {
		t.Fatalf("Probe while the child holds it = %+v, %v", st, err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	st, err := Probe(path)
	if err != nil || st.Running || st.PID != cmd.Process.Pid {
		t.Fatalf("Probe after kill -9 = %+v, %v; want not running, pid %d", st, err, cmd.Process.Pid)
	}
	l, err := AcquirePID(path, os.Getpid())
	if err != nil {
		t.Fatalf("AcquirePID after the holder died: %v", err)
	}
	l.Release()
}

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
