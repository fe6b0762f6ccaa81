package pgwire

import (
	"bufio"
	"encoding/binary"
	"io"

	"testing"
	"time"

	"github.com/fvsql/fvsql/types"
	"github.com/jackc/pgproto3/v2"
	"github.com/jackc/pgx/v5"
)

const benchRows = 1_000_000

// BenchmarkSelectRows streams 1M rows of (int8, text, float8) to pgx, which
// scans every value (binary results, pgx's default mode).
func BenchmarkSelectRows(b *testing.B) {
	_, addr := startServer(b, Config{}, newTestHandler())
	conn := connectPgx(b, addr, "")
	ctx := testCtx(b)
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		b.Run(mode.String(), func(b *testing.B) {
			start := time.Now()
			for i := 0; i < b.N; i++ {
				rows, err := conn.Query(ctx, "BENCH 1000000", mode)
				if err != nil {
					b.Fatal(err)
				}
				var n, id int64
				var name string
				var score float64
				for rows.Next() {
					if err := rows.Scan(&id, &name, &score); err != nil {
						b.Fatal(err)
					}
					n++
				}
				if err := rows.Err(); err != nil || n != benchRows {
					b.Fatalf("%d rows, %v", n, err)
				}
			}
			b.ReportMetric(float64(b.N)*benchRows/time.Since(start).Seconds(), "rows/s")
		})
	}
}

// BenchmarkSelectRowsRaw measures the server alone: a client that reads the
// bytes of 1M rows and only finds the ReadyForQuery at their end.
func BenchmarkSelectRowsRaw(b *testing.B) {
	_, addr := startServer(b, Config{}, newTestHandler())
	for _, binaryResults := range []bool{true, false} {
		name := "text"
		if binaryResults {
			name = "binary"
		}
		b.Run(name, func(b *testing.B) {
			c := dialStarted(b, addr)
			_ = c.nc.SetDeadline(time.Time{})
			br := bufio.NewReaderSize(c.nc, 256<<10)
			var formats []int16
			if binaryResults {
				formats = []int16{1}
			}
			var bytesRead int64
			start := time.Now()
			for i := 0; i < b.N; i++ {
				c.send(&pgproto3.Parse{Query: "BENCH 1000000"}, &pgproto3.Bind{ResultFormatCodes: formats},
					&pgproto3.Execute{}, &pgproto3.Sync{})
				rows := 0
				for {
					var hdr [5]byte
					if _, err := io.ReadFull(br, hdr[:]); err != nil {
						b.Fatal(err)
					}
					n := int(binary.BigEndian.Uint32(hdr[1:])) - 4
					if _, err := br.Discard(n); err != nil {
						b.Fatal(err)
					}
					bytesRead += int64(n + 5)
					if hdr[0] == 'D' {
						rows++
					}
					if hdr[0] == 'Z' {
						break
					}
				}
				if rows != benchRows {
					b.Fatalf("%d rows", rows)
				}
			}
			el := time.Since(start).Seconds()
			b.ReportMetric(float64(b.N)*benchRows/el, "rows/s")
			b.ReportMetric(float64(bytesRead)/el/1e6, "MB/s")
		})
	}
}

// BenchmarkAppendDataRow is the encoding alone.
func BenchmarkAppendDataRow(b *testing.B) {
	row := types.Row{types.NewInt8(123456), types.NewText("name-0042"), types.NewFloat8(1234.25)}
	buf := make([]byte, 0, 1<<16)
	for _, fmts := range [][]int16{nil, {1, 1, 1}} {
		name := "text"
		if fmts != nil {
			name = "binary"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				var err error
				if buf, err = appendDataRow(buf[:0], row, benchCols, fmts); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
