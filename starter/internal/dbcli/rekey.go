package dbcli

import (
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/edge-agent/edge-agent/starter/internal/wal"
	"github.com/edge-agent/edge-agent/transport/codec"
)

// readKeyFile reads a key file given on the command line the way the
// config reads queue.encryption.key-file: trimmed base64 decoded by
// codec.DecodeKey.
func readKeyFile(path, flag string) (wal.Encryption, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return wal.Encryption{}, fmt.Errorf("%s: cannot read: %w", flag, err)
	}
	k, err := codec.DecodeKey(string(b))
	if err != nil {
		return wal.Encryption{}, fmt.Errorf("%s %s: %w", flag, path, err)
	}
	return wal.Encryption{KeyFile: path, Key: k}, nil
}

func (r *runner) rekey(c *cli.Context) error {
	newFile := c.String(flagNewKeyFile)
	if newFile == "" {
		return errors.New("rekey needs --new-key-file <file holding the new key>")
	}
	next, err := readKeyFile(r.resolve(newFile), "--"+flagNewKeyFile)
	if err != nil {
		return err
	}
	if !c.Bool(flagYes) {
		return errors.New("rekey changes the WAL: give --yes")
	}
	s, err := r.source(c)
	if err != nil {
		return err
	}
	if err := s.needStopped("rekey"); err != nil {
		return err
	}
	if _, err := os.Stat(s.path); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no WAL at %s (set --db-path, %s or queue.path in --config): %w", s.path, envDBPath, wal.ErrNotFound)
	}
	enc := s.enc
	enc.NextKey, enc.NextKeyFile = next.Key, next.KeyFile
	// A running agent holding this file makes the open fail with
	// wal.ErrLocked.
	w, err := wal.Open(r.walOptions(s.path, false, enc))
	if err != nil {
		return err
	}
	defer w.Close()
	rep, err := w.Rekey(c.Context)
	if err != nil {
		return err
	}
	o := r.stdout(c)
	fmt.Fprintf(o, "sealed %s with the key of %s: %d positions, %d blocks re-sealed", s.path, next.KeyFile, rep.Positions, rep.Blocks)
	if rep.Resumed {
		fmt.Fprint(o, " (finished an interrupted rotation)")
	}
	fmt.Fprintln(o)
	for _, p := range rep.Unreadable {
		fmt.Fprintf(o, "  unreadable block, left as it is (its rows go DEAD when claimed): row %d: %s\n", p.RowID, p.What)
	}
	fmt.Fprintf(o, "now set queue.encryption.key-file: %s in agent.yaml and start the agent\n", next.KeyFile)
	return nil
}
