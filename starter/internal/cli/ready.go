package cli

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
)

// readyPipe is the child's end of the start --background handshake. Its
// methods are no-ops on a nil receiver, so the foreground path needs no
// special cases.
type readyPipe struct {
	once sync.Once
	f    *os.File
}

func openReadyPipe(fd int) *readyPipe {
	return &readyPipe{f: os.NewFile(uintptr(fd), "ready-pipe")}
}

func (p *readyPipe) ready() {
	p.send("ready " + strconv.Itoa(os.Getpid()))
}

func (p *readyPipe) failed(code int, err error) {
	msg := strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
	p.send(fmt.Sprintf("error %d %s", code, msg))
}

// send writes one line and closes the pipe: the parent needs exactly one
// answer, and the close tells it none will follow.
func (p *readyPipe) send(line string) {
	if p == nil || p.f == nil {
		return
	}
	p.once.Do(func() {
		_, _ = io.WriteString(p.f, line+"\n")
		_ = p.f.Close()
	})
}

// parseFailure decodes the child's "error <code> <message>" line.
func parseFailure(line string) (int, string, bool) {
	rest, ok := strings.CutPrefix(line, "error ")
	if !ok {
		return 0, "", false
	}
	codeStr, msg, _ := strings.Cut(rest, " ")
	code, err := strconv.Atoi(codeStr)
	if err != nil || code <= 0 {
		return 0, "", false
	}
	return code, msg, true
}
