package dbcli

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/edge-agent/edge-agent/starter/internal/dbview"
)

// reread asks the running agent to read a file again from an offset
// (POST /db/reread). The position lives in the file input as much as in
// the WAL (it follows the file by identity, counts lines, holds multiline
// groups), so a stopped agent is not changed: the command says so.
func (r *runner) reread(c *cli.Context) error {
	if !c.Bool(flagYes) {
		return errors.New("reread delivers the file's lines from --offset again: confirm with --yes")
	}
	a := dbview.RereadArgs{Path: c.String("path"), Input: c.String("input")}
	if c.IsSet("offset") {
		n := c.Int64("offset")
		a.Offset = &n
	}
	if err := a.Check(); err != nil {
		return fmt.Errorf("%w (--path, --offset)", err)
	}
	s, err := r.source(c)
	if err != nil {
		return err
	}
	if s.client == nil {
		return fmt.Errorf("reread needs the running agent: its file input moves the position while it reads (start the agent, then run this again; pid file %s)", r.pidFile())
	}
	rep, err := s.client.DBReread(c.Context, a)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(r.stdout(c), "%s (by the running agent; the new position is stored with its next commit)\n", rep.Note)
	return err
}
