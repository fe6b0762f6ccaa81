// Command waitkafka waits until a Kafka cluster answers, for
// ./scripts/test.sh: it repeats a Metadata and an ApiVersions request until
// every broker in the metadata answers ApiVersions and the cluster reports an
// active controller, or until -timeout passes.
//
// On success it prints one line describing the cluster (cluster id, brokers,
// controller, franz-go's guess of the Kafka version and the finalized
// metadata.version feature level) and exits 0; on timeout it prints the last
// error and exits 1.
//
//	go run ./tests/testenv/cmd/waitkafka -brokers 127.0.0.1:39092 -timeout 90s
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	brokers := flag.String("brokers", os.Getenv("FVSQL_TEST_KAFKA"), "comma separated Kafka bootstrap brokers (default $FVSQL_TEST_KAFKA)")
	timeout := flag.Duration("timeout", 90*time.Second, "how long to wait for the cluster")
	flag.Parse()
	if strings.TrimSpace(*brokers) == "" {
		fmt.Fprintln(os.Stderr, "waitkafka: no brokers: pass -brokers or set FVSQL_TEST_KAFKA")
		os.Exit(2)
	}

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	start := time.Now()
	var lastErr error
	for attempt := 1; ; attempt++ {
		desc, err := probe(ctx, strings.Split(*brokers, ","))
		if err == nil {
			fmt.Printf("waitkafka: %s ready after %s (%d attempts): %s\n",
				*brokers, time.Since(start).Round(time.Millisecond), attempt, desc)
			return
		}
		lastErr = err
		select {
		case <-ctx.Done():
			fmt.Fprintf(os.Stderr, "waitkafka: %s not ready after %s (%d attempts): %v\n",
				*brokers, time.Since(start).Round(time.Millisecond), attempt, lastErr)
			os.Exit(1)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// probe makes one attempt with a fresh client, bounded to a few seconds.
func probe(parent context.Context, seeds []string) (string, error) {
	ctx, cancel := context.WithTimeout(parent, 5*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(seeds...),
		kgo.DialTimeout(2*time.Second),
		kgo.RequestRetries(0),
		kgo.MetadataMinAge(10*time.Millisecond),
	)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	meta, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return "", fmt.Errorf("metadata: %w", err)
	}
	if len(meta.Brokers) == 0 {
		return "", errors.New("metadata lists no brokers yet")
	}
	if meta.Controller < 0 {
		return "", errors.New("no active controller yet")
	}
	versions, err := adm.ApiVersions(ctx)
	if err != nil {
		return "", fmt.Errorf("api versions: %w", err)
	}
	var parts []string
	for _, v := range versions.Sorted() {
		if v.Err != nil {
			return "", fmt.Errorf("api versions of broker %d: %w", v.NodeID, v.Err)
		}
		part := fmt.Sprintf("broker %d: %s", v.NodeID, v.VersionGuess())
		for _, f := range v.Raw().FinalizedFeatures {
			if f.Name == "metadata.version" {
				part += fmt.Sprintf(", metadata.version level %d", f.MaxVersionLevel)
			}
		}
		parts = append(parts, part)
	}
	sort.Strings(parts)
	return fmt.Sprintf("cluster %s, %d broker(s), controller %d; %s",
		meta.Cluster, len(meta.Brokers), meta.Controller, strings.Join(parts, "; ")), nil
}
