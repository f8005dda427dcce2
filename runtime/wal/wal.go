package wal

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
)

// Exit codes, as PostgreSQL reads them: 0 done. A push that failed exits
// ExitPushFailed, which the archiver retries (a code above 125 would make
// the archiver itself exit, and its failures go unrecorded). A fetch of a
// file that is not archived exits ExitMissing (recovery goes on to the
// next source, or ends); any other failed fetch ExitFailed, above 125,
// which aborts a recovery rather than let it end early at a segment it
// could not read.
const (
	ExitPushFailed = 1
	ExitMissing    = 1
	ExitFailed     = 255
)

// Operations.
const (
	OpPush  = "push"
	OpFetch = "fetch"
)

// Request is the line a client sends.
type Request struct {
	Op   string `json:"op"`
	Name string `json:"name"`
	// Path is the file's absolute path: the segment to archive, or where
	// to write the fetched one.
	Path string `json:"path"`
}

// Reply is the line the instance manager answers.
type Reply struct {
	OK      bool   `json:"ok,omitempty"`
	Missing bool   `json:"missing,omitempty"`
	Error   string `json:"error,omitempty"`
}

// Client runs one request against socket and returns the exit code for
// PostgreSQL. name is %f; file is %p, relative to the server's data
// directory (the command's working directory).
func Client(ctx context.Context, socket, op, name, file string) (int, error) {
	if op != OpPush && op != OpFetch {
		return ExitFailed, fmt.Errorf("%q is neither %s nor %s", op, OpPush, OpFetch)
	}
	code, err := request(ctx, socket, op, name, file)
	if err != nil && op == OpPush {
		code = ExitPushFailed
	}
	return code, err
}

func request(ctx context.Context, socket, op, name, file string) (int, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return ExitFailed, err
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return ExitFailed, fmt.Errorf("the instance manager's WAL socket: %w", err)
	}
	defer c.Close()
	data, _ := json.Marshal(Request{Op: op, Name: name, Path: abs})
	if _, err := c.Write(append(data, '\n')); err != nil {
		return ExitFailed, err
	}
	line, err := bufio.NewReader(io.LimitReader(c, 64<<10)).ReadBytes('\n')
	if err != nil {
		return ExitFailed, fmt.Errorf("the instance manager's WAL socket: %w", err)
	}
	var r Reply
	if err := json.Unmarshal(line, &r); err != nil {
		return ExitFailed, errors.New("the instance manager's reply is not JSON")
	}
	switch {
	case r.OK:
		return 0, nil
	case r.Missing:
		return ExitMissing, nil
	}
	return ExitFailed, errors.New(r.Error)
}
