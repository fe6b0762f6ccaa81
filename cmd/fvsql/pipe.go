package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/fvsql/fvsql/server"
)

// runPipe is `fvsql pipe [--format text|json|csv] [--columns '…'] "SELECT … FROM stdin …"`.
func runPipe(args []string) error {
	fs := flag.NewFlagSet("fvsql pipe", flag.ContinueOnError)
	format := fs.String("format", "text", "input format: text (one column, line), json or csv")
	columns := fs.String("columns", "", "the input's columns for json and csv, e.g. 'id BIGINT, msg TEXT'")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `usage: fvsql pipe [--format text|json|csv] [--columns '…'] "SELECT … FROM stdin …"

Lines may carry the stdio framing "[timestamp | stream_key | sequence | shard] payload":
the payload is decoded, the frame's parts are the columns _timestamp, _key, _offset and
_partition. A line that cannot be decoded is reported on stderr and skipped; the exit
status stays 0.`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return fmt.Errorf("pipe needs one SELECT")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return server.Pipe(ctx, fs.Arg(0), server.PipeConfig{Format: *format, Columns: *columns, Errors: os.Stderr}, os.Stdin, os.Stdout)
}
