// Package genmsg holds a message type whose msgpack methods tinylib/msgp
// generates (genmsg_gen.go), for the actor package's tests and benchmarks
// of the generated-codec path. msgp skips _test.go files, so the type
// lives here.
package genmsg

//go:generate go tool msgp -file genmsg.go -o genmsg_gen.go -tests=false

// Msg is a sequence number, bytes and a name.
type Msg struct {
	Seq  uint64 `msg:"Seq"`
	Data []byte `msg:"Data"`
	Name string `msg:"Name"`
}
