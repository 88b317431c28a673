package bootstrap

import (
	"hash/fnv"
	"strconv"
	"strings"
	"testing"
)

func fnv32(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}

func TestFirstHost(t *testing.T) {
	for list, want := range map[string]string{
		"node7":                   "node7",
		"node[01-04,07],gpu3":     "node01",
		"gpu[3,5-6]":              "gpu3",
		"a,b[1-2]":                "a",
		"rack1-node[008-010]-ib0": "rack1-node008-ib0",
	} {
		got, err := firstHost(list)
		if err != nil || got != want {
			t.Errorf("firstHost(%q) = %q, %v; want %q", list, got, err, want)
		}
	}
	for _, bad := range []string{"", "node]01["} {
		if _, err := firstHost(bad); err == nil {
			t.Errorf("firstHost(%q): no error", bad)
		}
	}
}

// Each scheduler's variables give rank, size, rendezvous and job; rdmactor's
// own take precedence, and RDMACTOR_BOOTSTRAP overrides a scheduler's
// address.
func TestSchedulerEnvironments(t *testing.T) {
	all := []string{EnvRank, EnvWorldSize, EnvBootstrap, EnvJob, envTorchRank, envTorchSize, envTorchAddr, envTorchPort,
		envTorchRunID, envSlurmRank, envSlurmSize, envSlurmNodes, envSlurmJobNodes, envSlurmJob, envSlurmStep,
		envMPIRank, envMPISize, envMPILocalSize, envMPIJob, envPMIxRank, envPMIxNamespace, EnvPort}
	for _, c := range []struct {
		name               string
		env                map[string]string
		rank, size         int
		addr, job, wantErr string
	}{
		{"torchrun", map[string]string{envTorchRank: "3", envTorchSize: "8", envTorchAddr: "10.0.0.5", envTorchPort: "29500", envTorchRunID: "run 1"},
			3, 8, "10.0.0.5:29500", "run-1", ""},
		{"slurm", map[string]string{envSlurmRank: "5", envSlurmSize: "16", envSlurmNodes: "gpu[02-05]", envSlurmJob: "4242", envSlurmStep: "0"},
			5, 16, "gpu02:29642", "slurm-4242.0", ""},
		{"slurm with a port", map[string]string{envSlurmRank: "1", envSlurmSize: "2", envSlurmJobNodes: "n1,n2", EnvPort: "7000"},
			1, 2, "n1:7000", "", ""},
		{"open mpi", map[string]string{envMPIRank: "2", envMPISize: "4", EnvBootstrap: "head:9000"},
			2, 4, "head:9000", "", ""},
		{"open mpi without an address", map[string]string{envMPIRank: "2", envMPISize: "4"},
			0, 0, "", "", EnvBootstrap},
		{"open mpi across hosts without an address", map[string]string{envMPIRank: "2", envMPISize: "4", envMPILocalSize: "2", envMPIJob: "77"},
			0, 0, "", "", EnvBootstrap},
		{"open mpi on one host", map[string]string{envMPIRank: "2", envMPISize: "4", envMPILocalSize: "4", envMPIJob: "289931265"},
			2, 4, "127.0.0.1:" + strconv.Itoa(DefaultPort+int(fnv32("289931265")%1000)), "ompi-289931265", ""},
		{"open mpi on one host with a port", map[string]string{envMPIRank: "0", envMPISize: "2", envMPILocalSize: "2", envPMIxNamespace: "prterun-h-9@1", EnvPort: "7001"},
			0, 2, "127.0.0.1:7001", "ompi-prterun-h-9-1", ""},
		{"pmix", map[string]string{envPMIxRank: "1", envMPISize: "3", EnvBootstrap: "head:9000", envPMIxNamespace: "prterun-x-1@1"},
			1, 3, "head:9000", "prterun-x-1-1", ""},
		{"rdmactor first", map[string]string{EnvRank: "0", EnvWorldSize: "2", EnvBootstrap: "h:1", envTorchRank: "1", envTorchSize: "9"},
			0, 2, "h:1", "", ""},
		{"bootstrap overrides torchrun's", map[string]string{envTorchRank: "0", envTorchSize: "2", envTorchAddr: "a", envTorchPort: "1", EnvBootstrap: "b:2"},
			0, 2, "b:2", "", ""},
		{"torchrun rank out of range", map[string]string{envTorchRank: "9", envTorchSize: "2", envTorchAddr: "a", envTorchPort: "1"},
			0, 0, "", "", EnvRank},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, k := range all {
				t.Setenv(k, "")
			}
			t.Setenv(EnvSecret, "00112233445566778899aabbccddeeff")
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			cfg, err := ConfigFromEnv()
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one naming %s", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Rank != c.rank || cfg.Size != c.size || cfg.Addr != c.addr || cfg.Job != c.job {
				t.Fatalf("got rank %d size %d addr %q job %q; want %d %d %q %q", cfg.Rank, cfg.Size, cfg.Addr, cfg.Job, c.rank, c.size, c.addr, c.job)
			}
		})
	}
}
