package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/fvsql/fvsql/backends"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/server"
)

// runPipe is `fvsql pipe [--format text|json|csv] [--columns '…']
// [--source URI --stream KEY [--mode realtime|load_balanced] [--group NAME]
// [--from TIME] [--until-end]] "SELECT … FROM stdin …"`.
func runPipe(args []string) error {
	fs := flag.NewFlagSet("fvsql pipe", flag.ContinueOnError)
	format := fs.String("format", "text", "input format: text (one column, line), json or csv")
	columns := fs.String("columns", "", "the input's columns for json and csv, e.g. 'id BIGINT, msg TEXT'")
	source := fs.String("source", "", "backend URI to read instead of standard input: kafka://host:port, redis://host:port, file:///dir/")
	stream := fs.String("stream", "", "the stream key to read on --source (topic, Redis key, file); the query's relation is named after it")
	mode := fs.String("mode", "", "realtime (default: every pipe sees every message) or load_balanced (the pipes of one --group share the stream)")
	group := fs.String("group", "", "consumer group of load_balanced reading (implies --mode load_balanced)")
	from := fs.String("from", "", "start at the first message stamped at or after TIME: a timestamp ('2026-01-02T03:04:05Z') or a negative duration ('-15m')")
	follow := fs.Bool("follow", true, "keep reading as the stream grows, like tail -f (the default)")
	untilEnd := fs.Bool("until-end", false, "stop at the end of the stream present when the pipe opened, so aggregates write their result")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `usage: fvsql pipe [--format text|json|csv] [--columns '…'] "SELECT … FROM stdin …"
       fvsql pipe --source URI --stream KEY [--mode realtime|load_balanced] [--group NAME]
                  [--from TIME] [--until-end] [--format …] [--columns '…'] "SELECT … FROM KEY …"

Lines may carry the stdio framing "[timestamp | stream_key | sequence | shard] payload":
the payload is decoded, the frame's parts are the columns _timestamp, _key, _offset and
_partition. With --source the relation is named after --stream (quote names with dots
or dashes: FROM "app.logs") and those columns come from each message. Input that
cannot be decoded is reported on stderr and skipped; the exit status stays 0.`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return fmt.Errorf("pipe needs one SELECT")
	}
	followSet := false
	fs.Visit(func(f *flag.Flag) { followSet = followSet || f.Name == "follow" })
	if *untilEnd && followSet && *follow {
		return withSQLState(pgerror.New(pgerror.InvalidParameterValue, "--follow and --until-end contradict each other: follow the stream, or stop at its end"))
	}
	cfg := server.PipeConfig{
		Format: *format, Columns: *columns, Errors: os.Stderr,
		Source: *source, Stream: *stream, Mode: *mode, Group: *group,
		UntilEnd: *untilEnd || !*follow,
		// The command reads what its user may read: file:// paths are not
		// confined to a server's file root.
		Env: backends.Env{FileRoot: "/"},
	}
	if *from != "" {
		t, err := server.ParsePipeTime(*from, time.Now())
		if err != nil {
			return withSQLState(err)
		}
		cfg.From = t
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := server.Pipe(ctx, fs.Arg(0), cfg, os.Stdin, os.Stdout)
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return nil // interrupted: the way to stop a pipe that follows
	}
	return withSQLState(err)
}

// withSQLState adds the SQLSTATE of a client-facing error to its message,
// so scripts and people see which of PostgreSQL's classes it is.
func withSQLState(err error) error {
	var pe *pgerror.Error
	if errors.As(err, &pe) {
		return fmt.Errorf("%w (SQLSTATE %s)", err, pe.Code)
	}
	return err
}
