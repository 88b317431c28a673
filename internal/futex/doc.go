// Package futex holds the doorbell a waiter blocks on until another thread
// or process rings it: a 32-bit sequence word and a waiter count, both in
// memory the ringers can reach (a shared mapping across processes, or any
// Go memory within one), and the Linux futex(2) calls behind them.
//
// The protocol is Dekker's, on sequentially consistent atomics: a ringer
// publishes its change (a signal's atomic add) and then loads the waiter
// count; a waiter stores into the waiter count (Arm) and then re-checks the
// change before it sleeps on the sequence word. At least one of the two sees
// the other, so no wake-up is lost, and a ringer that finds no waiter pays
// one load and no system call.
//
// It may hold only the doorbell; what a waiter waits for (signals, rings)
// belongs to the caller.
package futex
