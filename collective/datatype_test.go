package collective_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rdmactor/rdmactor/collective"
)

// The names are what the examples' -op and -type flags take.
func TestNames(t *testing.T) {
	ops := map[collective.Op]string{collective.Sum: "sum", collective.Prod: "prod", collective.Min: "min", collective.Max: "max", 9: "Op(9)"}
	for op, want := range ops {
		assert.Equal(t, want, op.String())
	}
	assert.Equal(t, "float32", collective.Float32.String())
	assert.Equal(t, "DataType(99)", collective.DataType(99).String())
}
