package collective

import (
	"fmt"
	"testing"
)

func BenchmarkReduce(b *testing.B) {
	const n = 2 << 20
	d, x, y := make([]byte, n), make([]byte, n), make([]byte, n)
	for _, dt := range []DataType{Float32, Float64, Int32, Int64} {
		for _, op := range []Op{Sum, Max} {
			b.Run(fmt.Sprintf("%v/%v", dt, op), func(b *testing.B) {
				b.SetBytes(n)
				for b.Loop() {
					reduce(dt, op, d, x, y)
				}
			})
		}
	}
	b.Run("copy", func(b *testing.B) {
		b.SetBytes(n)
		for b.Loop() {
			copy(d, x)
		}
	})
}
