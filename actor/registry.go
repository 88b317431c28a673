package actor

import (
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/vmihailenco/msgpack/v5"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// msgType is a registered message type.
type msgType struct {
	name   string
	typ    reflect.Type // T, never a pointer
	decode func(d *msgpack.Decoder, value bool) (any, error)
	// custom: *T implements msgpack.CustomEncoder and CustomDecoder, which
	// are then called directly (msgpack's Encode and Decode would first
	// look the type up in a sync.Map on every message).
	custom bool
	// gen: *T has tinylib/msgp's generated MarshalMsg and UnmarshalMsg,
	// which encode straight into the frame buffer and decode from the
	// frame's bytes, with no msgpack.Encoder or Decoder at all.
	gen       bool
	unmarshal func(b []byte, value bool) (any, error)
}

// appendMarshaler and bytesUnmarshaler are tinylib/msgp's msgp.Marshaler
// and msgp.Unmarshaler (github.com/tinylib/msgp/msgp, v1.6): the methods
// its generator writes (`//go:generate msgp`). They are matched by method
// set, so this package does not import msgp.
type (
	appendMarshaler interface {
		MarshalMsg(b []byte) ([]byte, error)
	}
	bytesUnmarshaler interface {
		UnmarshalMsg(b []byte) ([]byte, error)
	}
)

// registry holds the message types, by wire name and by Go type (T and
// *T). Reads are lock-free (a copied map behind an atomic pointer);
// registration copies under mu, as it happens once per type at init.
var registry struct {
	mu     sync.Mutex
	byName atomic.Pointer[map[string]*msgType]
	byType atomic.Pointer[map[reflect.Type]*msgType]
	// protos caches protobuf message types by full name (the global
	// protobuf registry takes a FullName, which a []byte lookup would
	// allocate).
	protoMu sync.Mutex
	protos  atomic.Pointer[map[string]protoreflect.MessageType]
}

func init() {
	registry.byName.Store(&map[string]*msgType{})
	registry.byType.Store(&map[reflect.Type]*msgType{})
	registry.protos.Store(&map[string]protoreflect.MessageType{})
}

// RegisterMessage registers T, a type that msgpack can encode (usually a
// struct), under its package path and name ("example.com/app.Ping";
// "main.Ping" in a main package), so that T and *T values cross ranks.
// A message arrives in the form it was sent: *T as *T, T as T.
//
// Every rank must register the same types under the same names, before
// messages of them arrive: call it from init or before actor.Start.
// Registering (T, name) again is a no-op. It panics (a caller bug) if T is
// a pointer, interface or unnamed type, if the name is taken by another
// type or T has another name, or if *T is a protobuf message: those cross
// by their protobuf full name without registration.
//
// Encoding is msgpack v5 by reflection (github.com/vmihailenco/msgpack).
// A type whose pointer has the MarshalMsg and UnmarshalMsg methods that
// tinylib/msgp's generator writes (github.com/tinylib/msgp, `//go:generate
// msgp`) is encoded by them straight into the frame buffer and decoded from
// the frame's bytes: the fastest path (examples/pingpong measures both,
// its rdmactor and rdmactor+codec figures). A type whose
// pointer implements msgpack.CustomEncoder and msgpack.CustomDecoder
// (hand-written EncodeMsgpack and DecodeMsgpack) skips the reflection too.
// All three produce standard msgpack, so ranks may mix them for one type
// as long as the field layout agrees.
func RegisterMessage[T any]() {
	t := reflect.TypeFor[T]()
	if t.Name() == "" {
		panic(fmt.Sprintf("actor.RegisterMessage: %v is not a named type", t))
	}
	RegisterMessageName[T](t.PkgPath() + "." + t.Name())
}

// RegisterMessageName is RegisterMessage with an explicit wire name, for
// names that must stay stable when the Go type moves, or that programs of
// different packages share. Panics as RegisterMessage, and for an empty
// name.
func RegisterMessageName[T any](name string) {
	t := reflect.TypeFor[T]()
	switch {
	case name == "":
		panic(fmt.Sprintf("actor.RegisterMessageName: empty name for %v", t))
	case t.Kind() == reflect.Pointer || t.Kind() == reflect.Interface:
		panic(fmt.Sprintf("actor.RegisterMessage: %v: register the element type, not a pointer or interface", t))
	case reflect.PointerTo(t).Implements(protoMessageType):
		panic(fmt.Sprintf("actor.RegisterMessage: %v is a protobuf message: it crosses ranks by its protobuf name, unregistered", t))
	}
	_, custom := any(new(T)).(interface {
		msgpack.CustomEncoder
		msgpack.CustomDecoder
	})
	_, gen := any(new(T)).(interface {
		appendMarshaler
		bytesUnmarshaler
	})
	mt := &msgType{name: name, typ: t, custom: custom, gen: gen, decode: func(d *msgpack.Decoder, value bool) (any, error) {
		p := new(T)
		var err error
		if custom {
			err = any(p).(msgpack.CustomDecoder).DecodeMsgpack(d)
		} else {
			err = d.Decode(p)
		}
		if err != nil {
			return nil, err
		}
		if value {
			return *p, nil
		}
		return p, nil
	}}
	if gen {
		mt.unmarshal = func(b []byte, value bool) (any, error) {
			p := new(T)
			rest, err := any(p).(bytesUnmarshaler).UnmarshalMsg(b)
			if err != nil {
				return nil, err
			}
			if len(rest) != 0 {
				return nil, fmt.Errorf("%d bytes after the message", len(rest))
			}
			if value {
				return *p, nil
			}
			return p, nil
		}
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	byName, byType := *registry.byName.Load(), *registry.byType.Load()
	if old, ok := byName[name]; ok {
		if old.typ == t {
			return
		}
		panic(fmt.Sprintf("actor.RegisterMessage: name %q is taken by %v, cannot register %v", name, old.typ, t))
	}
	if old, ok := byType[t]; ok {
		panic(fmt.Sprintf("actor.RegisterMessage: %v is registered as %q, cannot register it as %q", t, old.name, name))
	}
	nn := make(map[string]*msgType, len(byName)+1)
	for k, v := range byName {
		nn[k] = v
	}
	nn[name] = mt
	nt := make(map[reflect.Type]*msgType, len(byType)+2)
	for k, v := range byType {
		nt[k] = v
	}
	nt[t], nt[reflect.PointerTo(t)] = mt, mt
	registry.byName.Store(&nn)
	registry.byType.Store(&nt)
}

// RegisteredName returns the wire name msg's type is registered under, or
// its protobuf full name, and whether it can cross ranks at all.
func RegisteredName(msg any) (string, bool) {
	if mt := (*registry.byType.Load())[reflect.TypeOf(msg)]; mt != nil {
		return mt.name, true
	}
	if pm, ok := msg.(proto.Message); ok {
		return string(pm.ProtoReflect().Descriptor().FullName()), true
	}
	return "", false
}

var protoMessageType = reflect.TypeFor[proto.Message]()

// typeByName returns the registered type with wire name b.
func typeByName(b []byte) *msgType { return (*registry.byName.Load())[string(b)] }

// protoByName returns the protobuf message type with full name b, looking
// in the global protobuf registry once per name.
func protoByName(b []byte) (protoreflect.MessageType, bool) {
	if mt, ok := (*registry.protos.Load())[string(b)]; ok {
		return mt, true
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(b))
	if err != nil {
		return nil, false
	}
	registry.protoMu.Lock()
	defer registry.protoMu.Unlock()
	old := *registry.protos.Load()
	nm := make(map[string]protoreflect.MessageType, len(old)+1)
	for k, v := range old {
		nm[k] = v
	}
	nm[string(b)] = mt
	registry.protos.Store(&nm)
	return mt, true
}
