package testutils

import (
	"fmt"
	"sync"
)

// GoRanks runs fn(0..n-1), one goroutine per rank of a job whose ranks are
// goroutines of this process, and returns every rank's error; a panic
// becomes that rank's error. After the first failure it calls stop (if not
// nil), which should end the job's context, so ranks waiting for the failed
// one stop too instead of running into their deadline.
func GoRanks(n int, stop func(), fn func(r int) error) []error {
	errs := make([]error, n)
	fail := func() {
		if stop != nil {
			stop()
		}
	}
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			defer func() {
				if p := recover(); p != nil {
					errs[r] = fmt.Errorf("panic: %v", p)
					fail()
				}
			}()
			if errs[r] = fn(r); errs[r] != nil {
				fail()
			}
		})
	}
	wg.Wait()
	return errs
}
