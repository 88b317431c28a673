// Command rdmarun starts the ranks of an rdmactor job on this host, as
// torchrun or mpirun do:
//
//	rdmarun [-np N] [-transport shm] [-timeout D] [-host H] [-gomaxprocs auto] [-bind core] prog [args...]
//	rdmarun -nnodes N -node-rank K -master HOST:PORT [-np M] [-transport ofi] prog [args...]
//
// Examples:
//
//	go run ./cmd/rdmarun -np 4 ./bin/putsignal
//	go run ./cmd/rdmarun -np 2 -timeout 1m ./bin/pingpong -iters 1000
//
// Every rank runs prog with args and RDMACTOR_RANK, RDMACTOR_WORLD_SIZE,
// RDMACTOR_LOCAL_RANK, RDMACTOR_LOCAL_SIZE, RDMACTOR_BOOTSTRAP (rank 0's
// control address, a free port on -host), RDMACTOR_TRANSPORT (with
// -transport) and RDMACTOR_JOB set (see internal/launch); each line of its output is
// prefixed "[<rank>] ". Flags end at prog: what follows is prog's. When a
// rank fails, the others are killed (SIGTERM, then SIGKILL after 2 s); so
// are all on -timeout (SIGQUIT first with -dump-on-timeout, so that Go
// ranks print their goroutines' stacks), SIGINT or SIGTERM. Once all have
// exited, the job's shared-memory files are removed.
//
// Across hosts, run rdmarun on each node with the same -nnodes, -np and
// -master and the node's own -node-rank: node K starts ranks K*M .. K*M+M-1
// of N*M, and rank 0 (on node 0) serves the rendezvous at -master, which
// must be an address of node 0. The nodes must share the job secret
// through RDMACTOR_JOB_SECRET or RDMACTOR_JOB_SECRET_FILE (rdmarun refuses
// to start without one). Without -transport the ranks use the transport
// of rdmarun's environment (RDMACTOR_TRANSPORT), else their program's
// default: "auto" where it registers it (shm within a host, ofi between
// hosts in a build with -tags ofi; without it, peers on other hosts are
// refused with an error that says so).
// Each node's rdmarun supervises the ranks it started.
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
	"math"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strconv"
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
	np := fs.Int("np", 1, "number of ranks (on this node)")
	transport := fs.String("transport", "", "rdma provider the ranks use (RDMACTOR_TRANSPORT); default: as in this environment, else the program's own (auto where registered: shm within a host, ofi between hosts)")
	timeout := fs.Duration("timeout", 0, "kill all ranks and fail after this long (0: no limit)")
	dump := fs.Bool("dump-on-timeout", false, "on -timeout, send SIGQUIT before SIGKILL rather than SIGTERM: Go ranks print every goroutine's stack (where a hung rank waits)")
	host := fs.String("host", "127.0.0.1", "host of the bootstrap address (rank 0's control endpoint), on one node")
	keepGoing := fs.Bool("keep-going", false, "when a rank fails, report it and let the others run on (as a supervisor would); the exit status is still the first failure's")
	nnodes := fs.Int("nnodes", 1, "number of nodes, each running rdmarun with the same -np")
	nodeRank := fs.Int("node-rank", 0, "this node's index, in [0, nnodes): its ranks are node-rank*np .. node-rank*np+np-1")
	master := fs.String("master", "", "bootstrap address HOST:PORT, an address of node 0 where its rank 0 listens; required with -nnodes > 1")
	bind := fs.String("bind", "auto", "bind each rank to processors of its own: core (the processors this launcher may run on, divided among its -np ranks in equal blocks, as mpirun --bind-to core; fails with more ranks than processors), auto (core where the ranks are no more than the processors, else none) or none (ranks that share this host with another launcher's, as in a test that stands namespaces for hosts)")
	procs := fs.String("gomaxprocs", "", "GOMAXPROCS of every rank: N, or auto (the processors of this node divided among its -np ranks where they are no more than the processors; more ranks keep the default); default: as in this environment")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: rdmarun [-np N] [-transport shm] [-timeout D] [-host H] [-keep-going] prog [args...]")
		fmt.Fprintln(fs.Output(), "       rdmarun -nnodes N -node-rank K -master HOST:PORT [-np M] [flags] prog [args...]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if err := checkFlags(fs, *np, *nnodes, *nodeRank, *master, *procs); err != nil {
		fmt.Fprintf(stderr, "rdmarun: %v\n", err)
		fs.Usage()
		return 2
	}
	cpus, err := cpuBlocks(*bind, *np)
	if err != nil {
		fmt.Fprintf(stderr, "rdmarun: %v\n", err)
		return 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	if *transport == "" {
		*transport = launch.InheritTransport
	} else if *transport == "shm" && *nnodes > 1 {
		fmt.Fprintln(stderr, "rdmarun: note: -transport shm reaches ranks of one host only: every node must be this host")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	_, err = launch.Run(ctx, launch.Options{
		NP:            *np,
		Transport:     *transport,
		Prog:          fs.Arg(0),
		Args:          fs.Args()[1:],
		Env:           gomaxprocs(*procs, *np),
		Stdout:        stdout,
		Stderr:        stderr,
		KillOnFailure: !*keepGoing,
		OnExit: func(r launch.Result) {
			if *keepGoing && r.ExitCode != 0 {
				fmt.Fprintf(stderr, "rdmarun: rank %d exited with code %d; the others run on (-keep-going)\n", r.Rank, r.ExitCode)
			}
		},
		Timeout:       *timeout,
		DumpOnTimeout: *dump,
		Host:          *host,
		Addr:          *master,
		WorldSize:     *nnodes * *np,
		RankBase:      *nodeRank * *np,
		Cleanup:       shm.Cleanup,
		CPUs:          cpus,
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

// gomaxprocs is the environment -gomaxprocs v gives each of np ranks: none
// for "", else GOMAXPROCS set to v, or for "auto" to the processors this
// process may run on (runtime.NumCPU, which follows its CPU affinity)
// divided among the ranks, where there are no more ranks than processors;
// with more, auto sets nothing.
//
// Why: a Go rank runs as many threads as GOMAXPROCS allows, and where the
// ranks of a node take all its processors those threads only preempt
// each other's ranks (as torchrun sets OMP_NUM_THREADS=1 for the same
// reason). With more ranks than processors, waits block, and a second
// processor runs a rank's actors while its receive loop sleeps in the
// kernel: there the default measured faster. docs/tuning.md gives both.
// checkFlags has checked v.
func gomaxprocs(v string, np int) []string {
	switch {
	case v == "" || v == "auto" && np > runtime.NumCPU():
		return nil
	case v == "auto":
		return []string{"GOMAXPROCS=" + strconv.Itoa(runtime.NumCPU()/np)}
	}
	return []string{"GOMAXPROCS=" + v}
}

// cpuBlocks is what -bind mode gives the np ranks (launch.CoreBlocks): nil
// for none, and for auto where there are more ranks than processors.
func cpuBlocks(mode string, np int) ([][]int, error) {
	switch mode {
	case "none":
		return nil, nil
	case "auto", "core":
		b, err := launch.CoreBlocks(np)
		if err != nil && mode == "auto" {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("-bind core: %w (-bind none runs them unbound)", err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("-bind %q: want core, auto or none", mode)
}

// checkFlags validates the counts, the multi-node flags and -gomaxprocs,
// before anything starts.
func checkFlags(fs *flag.FlagSet, np, nnodes, nodeRank int, master, procs string) error {
	if n, err := strconv.Atoi(procs); procs != "" && procs != "auto" && (err != nil || n < 1) {
		return fmt.Errorf("-gomaxprocs %q: want auto or a count >= 1", procs)
	}
	switch {
	case np < 1:
		return fmt.Errorf("-np %d: want >= 1", np)
	case nnodes < 1:
		return fmt.Errorf("-nnodes %d: want >= 1", nnodes)
	case nodeRank < 0 || nodeRank >= nnodes:
		return fmt.Errorf("-node-rank %d: want in [0, %d) (-nnodes %d)", nodeRank, nnodes, nnodes)
	case nnodes > 1 && master == "":
		return fmt.Errorf("-nnodes %d needs -master HOST:PORT, an address of node 0, the same on every node", nnodes)
	case nnodes > math.MaxInt32/np:
		return fmt.Errorf("-nnodes %d times -np %d: too many ranks", nnodes, np)
	}
	if master != "" {
		h, p, err := net.SplitHostPort(master)
		if _, perr := strconv.ParseUint(p, 10, 16); err != nil || perr != nil || h == "" || p == "0" {
			return fmt.Errorf("-master %q: want HOST:PORT with a port in [1, 65535]", master)
		}
		hostSet := false
		fs.Visit(func(f *flag.Flag) { hostSet = hostSet || f.Name == "host" })
		if hostSet {
			return errors.New("-host and -master both name the bootstrap address: give one")
		}
	}
	return nil
}
