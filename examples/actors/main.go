// Command actors is a distributed word count on rdmactor: every rank runs
// a pool of worker actors and one reducer; rank 0 cuts the text into
// chunks and feeds them through a protoactor-go round-robin router to the
// workers of all ranks; each worker counts its chunk and sends every
// reducer the counts of the words that reducer owns (hash of the word mod
// ranks); rank 0 then collects each reducer's share and prints the most
// frequent words, checked against a count it makes alone.
//
//	go build -o bin/ ./cmd/rdmarun ./examples/actors
//	bin/rdmarun -np 4 bin/actors                 # the built-in text
//	bin/rdmarun -np 4 bin/actors -top 10 book.txt
//	bin/actors -local 4                          # ranks as goroutines
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/router"

	"github.com/rdmactor/rdmactor/actor"
)

type options struct {
	local   int
	workers int
	top     int
	chunk   int
	repeat  int
	file    string
	timeout time.Duration
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("actors: ")
	var o options
	flag.IntVar(&o.local, "local", 0, "run this many ranks as goroutines of one process instead of reading RDMACTOR_* from the launcher")
	flag.IntVar(&o.workers, "workers", 2, "worker actors per rank")
	flag.IntVar(&o.top, "top", 20, "most frequent words to print")
	flag.IntVar(&o.chunk, "chunk", 4<<10, "bytes of text per chunk (cut at line ends)")
	flag.IntVar(&o.repeat, "repeat", 100, "times the built-in text is repeated (without a file)")
	flag.DurationVar(&o.timeout, "timeout", 2*time.Minute, "deadline for the whole run")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: actors [flags] [text file]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 1 {
		flag.Usage()
		os.Exit(2)
	}
	o.file = flag.Arg(0)
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()

	err := actor.RunRanks(ctx, o.local, actor.Config{}, func(ctx context.Context, n *actor.Node) error {
		return run(ctx, n, o)
	})
	if err != nil {
		log.Fatal(err)
	}
}

// run is one rank: spawn its workers and reducer, then rank 0 drives.
func run(ctx context.Context, n *actor.Node, o options) (err error) {
	defer func() { err = errors.Join(err, n.Close()) }()
	for i := range o.workers {
		if _, err := n.SpawnNamed(actor.PropsFromFunc(worker(n)), fmt.Sprintf("worker-%d", i)); err != nil {
			return err
		}
	}
	if _, err := n.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return &reducer{} }), "reducer"); err != nil {
		return err
	}
	if err := n.Barrier(ctx); err != nil { // every rank's actors exist
		return err
	}
	if n.Rank() == 0 {
		if err := drive(ctx, n, o); err != nil {
			return err
		}
	}
	return n.Barrier(ctx) // nobody leaves while others may still send
}

// drive cuts the text, feeds the chunks through a router over every
// rank's workers, collects the reducers' results and prints them.
func drive(ctx context.Context, n *actor.Node, o options) error {
	text, source, err := load(o)
	if err != nil {
		return err
	}
	chunks := cut(text, max(o.chunk, 64))
	var workers []*actor.PID
	for r := range n.Size() {
		for i := range o.workers {
			workers = append(workers, n.PID(r, fmt.Sprintf("worker-%d", i)))
		}
	}
	rr := n.Spawn(router.NewRoundRobinGroup(workers...))

	start := time.Now()
	for i, c := range chunks {
		n.Root().Send(rr, &Chunk{Seq: i, Text: c})
	}
	futures := make([]*actor.Future, n.Size())
	for r := range futures {
		futures[r] = n.Root().RequestFuture(n.PID(r, "reducer"), &Collect{Chunks: len(chunks), Top: o.top}, time.Until(deadline(ctx)))
	}
	var total Result
	for r, f := range futures {
		res, err := f.Result()
		if err != nil {
			return fmt.Errorf("collect from rank %d: %w", r, err)
		}
		part := res.(*Result)
		total.Words += part.Words
		total.Distinct += part.Distinct
		total.Top = append(total.Top, part.Top...)
	}
	took := time.Since(start)
	sortCounts(total.Top)
	if len(total.Top) > o.top {
		total.Top = total.Top[:o.top]
	}

	fmt.Printf("%s: %d bytes in %d chunks, %d ranks × %d workers\n", source, len(text), len(chunks), n.Size(), o.workers)
	fmt.Printf("%d words, %d distinct, counted in %v (%d chunks routed, %d partials reduced)\n",
		total.Words, total.Distinct, took.Round(time.Microsecond), len(chunks), len(chunks)*n.Size())
	for i, wc := range total.Top {
		fmt.Printf("%4d. %-16s %8d\n", i+1, wc.Word, wc.Count)
	}
	return check(text, &total, o.top)
}

// check counts text alone and compares.
func check(text string, got *Result, top int) error {
	counts := map[string]int{}
	all := words(text)
	for _, w := range all {
		counts[w]++
	}
	want := make([]WordCount, 0, len(counts))
	for w, c := range counts {
		want = append(want, WordCount{w, c})
	}
	sortCounts(want)
	want = want[:min(top, len(want))]
	if got.Words != len(all) || got.Distinct != len(counts) || fmt.Sprint(got.Top) != fmt.Sprint(want) {
		return fmt.Errorf("distributed count differs from the local one: %d words, %d distinct, top %v; want %d, %d, %v",
			got.Words, got.Distinct, got.Top, len(all), len(counts), want)
	}
	fmt.Println("matches a count by rank 0 alone")
	return nil
}

// load returns the text to count: the file, or the built-in text
// repeated.
func load(o options) (text, source string, err error) {
	if o.file == "" {
		return strings.Repeat(builtinText, max(o.repeat, 1)), fmt.Sprintf("built-in text ×%d", max(o.repeat, 1)), nil
	}
	b, err := os.ReadFile(o.file)
	if err != nil {
		return "", "", err
	}
	return string(b), o.file, nil
}

// cut splits text into chunks of about size bytes, at line ends where it
// can (a longer line is cut at a space, or where it must).
func cut(text string, size int) []string {
	size = max(size, 1)
	var out []string
	for len(text) > size {
		i := strings.LastIndexByte(text[:size], '\n')
		if i < 0 {
			i = strings.LastIndexByte(text[:size], ' ')
		}
		if i < 0 {
			i = size - 1
		}
		out = append(out, text[:i+1])
		text = text[i+1:]
	}
	if text != "" {
		out = append(out, text)
	}
	return out
}

func deadline(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(time.Minute)
}
