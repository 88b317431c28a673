// Command rdmarun starts the ranks of an rdmactor job on this host, as
// torchrun or mpirun do:
//
//	rdmarun [-np N] [-transport shm] [-timeout D] [-host H] prog [args...]
//
// Examples:
//
//	go run ./cmd/rdmarun -np 4 ./bin/putsignal
//	go run ./cmd/rdmarun -np 2 -timeout 1m ./bin/pingpong -iters 1000
//
// Every rank runs prog with args and RDMACTOR_RANK, RDMACTOR_WORLD_SIZE,
// RDMACTOR_BOOTSTRAP (rank 0's control address, a free port on -host),
// RDMACTOR_TRANSPORT and RDMACTOR_JOB set (see internal/launch); each line
// of its output is prefixed "[<rank>] ". Flags end at prog: what follows is
// prog's. When a rank fails, the others are killed (SIGTERM, then SIGKILL
// after 2 s); so are all on -timeout, SIGINT or SIGTERM. Once all have
// exited, the job's shared-memory files are removed.
//
// The exit code is 0 when every rank succeeded, else the exit code of the
// first rank that failed (128+n for a rank killed by signal n), 1 on
// timeout or another error, and 2 on bad usage.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/rdmactor/rdmactor/internal/launch"
	"github.com/rdmactor/rdmactor/transport/rdma/shm"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is rdmarun with its arguments and writers; it returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rdmarun", flag.ContinueOnError)
	fs.SetOutput(stderr)
	np := fs.Int("np", 1, "number of ranks")
	transport := fs.String("transport", "shm", "rdma provider the ranks use (RDMACTOR_TRANSPORT)")
	timeout := fs.Duration("timeout", 0, "kill all ranks and fail after this long (0: no limit)")
	host := fs.String("host", "127.0.0.1", "host of the bootstrap address (rank 0's control endpoint)")
	keepGoing := fs.Bool("keep-going", false, "when a rank fails, report it and let the others run on (as a supervisor would); the exit status is still the first failure's")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: rdmarun [-np N] [-transport shm] [-timeout D] [-host H] [-keep-going] prog [args...]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() == 0 || *np < 1 {
		if *np < 1 {
			fmt.Fprintf(stderr, "rdmarun: -np %d: want >= 1\n", *np)
		}
		fs.Usage()
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	_, err := launch.Run(ctx, launch.Options{
		NP:            *np,
		Transport:     *transport,
		Prog:          fs.Arg(0),
		Args:          fs.Args()[1:],
		Stdout:        stdout,
		Stderr:        stderr,
		KillOnFailure: !*keepGoing,
		OnExit: func(r launch.Result) {
			if *keepGoing && r.ExitCode != 0 {
				fmt.Fprintf(stderr, "rdmarun: rank %d exited with code %d; the others run on (-keep-going)\n", r.Rank, r.ExitCode)
			}
		},
		Timeout: *timeout,
		Host:    *host,
		Cleanup: shm.Cleanup,
	})
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "rdmarun: %v\n", err)
	if re := (*launch.RankError)(nil); errors.As(err, &re) && re.ExitCode > 0 && re.ExitCode < 256 {
		return re.ExitCode
	}
	return 1
}
