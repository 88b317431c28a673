package gin

import "golang.org/x/sys/unix"

// cpuSetSize is the processors a unix.CPUSet holds (glibc's CPU_SETSIZE).
const cpuSetSize = 1024

// cpuSet is the processors this process may run on, as a bitmap (bit i of
// byte i/8: processor i); nil when the kernel does not say.
func cpuSet() []byte {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil
	}
	var b []byte
	for cpu := range cpuSetSize {
		if set.IsSet(cpu) {
			for len(b) <= cpu/8 {
				b = append(b, 0)
			}
			b[cpu/8] |= 1 << (cpu % 8)
		}
	}
	return b
}
