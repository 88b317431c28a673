package launch

import (
	"bufio"
	"io"
	"sync"
)

// forward copies r to w line by line, each line prefixed and written with
// one Write under mu; a last line without newline gets one. Write errors are
// ignored (the rank's output is lost, the rank is not disturbed).
func forward(r io.Reader, w io.Writer, mu *sync.Mutex, prefix string) {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			buf := make([]byte, 0, len(prefix)+len(line)+1)
			buf = append(buf, prefix...)
			buf = append(buf, line...)
			if line[len(line)-1] != '\n' {
				buf = append(buf, '\n')
			}
			mu.Lock()
			_, _ = w.Write(buf)
			mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}
