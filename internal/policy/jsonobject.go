package policy

import (
	"reflect"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
)

// jsonObject is an object of a call's arguments as CEL reads it: a map
// with string keys whose values are made on first lookup and kept for the
// call's other conditions, so that a condition that reads one key of the
// arguments pays for that key alone. Its keys are decoded and were
// checked (argsReader.check): no two alike, even by case. Lookups (Find,
// Get, Contains) and Size answer from the keys; every other operation
// (equality, iteration, conversion) is the map's made whole once, a
// cel-go map, so that those behave as CEL's own maps do.
//
// It is valid until the reader's next read: its keys and values are in
// the reader's parser.
type jsonObject struct {
	a    *argsReader
	kvs  []keyVal
	vals []ref.Val     // vals[i]: kvs[i]'s value once made
	full traits.Mapper // the whole map, once made
}

var _ traits.Mapper = (*jsonObject)(nil)

// index returns the index of key k, or -1.
func (o *jsonObject) index(k string) int {
	for i := range o.kvs {
		if string(o.kvs[i].k) == k {
			return i
		}
	}
	return -1
}

// val returns the value at index i, made once.
func (o *jsonObject) val(i int) ref.Val {
	if o.vals == nil {
		o.vals = make([]ref.Val, len(o.kvs))
	}
	if o.vals[i] == nil {
		o.vals[i] = o.a.value(o.kvs[i].v)
	}
	return o.vals[i]
}

// whole returns the object as a cel-go map, made once.
func (o *jsonObject) whole() traits.Mapper {
	if o.full == nil {
		m := make(map[string]ref.Val, len(o.kvs))
		for i := range o.kvs {
			m[string(o.kvs[i].k)] = o.val(i)
		}
		o.full = types.NewMap(types.DefaultTypeAdapter, m)
	}
	return o.full
}

// Find implements traits.Mapper. A key that is not a string is the whole
// map's to answer (not found, or the error or unknown it is).
func (o *jsonObject) Find(key ref.Val) (ref.Val, bool) {
	k, ok := key.(types.String)
	if !ok {
		return o.whole().Find(key)
	}
	if i := o.index(string(k)); i >= 0 {
		return o.val(i), true
	}
	return nil, false
}

// Get implements traits.Indexer, as cel-go's maps do.
func (o *jsonObject) Get(key ref.Val) ref.Val {
	if _, ok := key.(types.String); !ok {
		return o.whole().Get(key)
	}
	v, found := o.Find(key)
	if !found {
		return types.ValOrErr(v, "no such key: %v", key)
	}
	return v
}

// Contains implements traits.Container.
func (o *jsonObject) Contains(key ref.Val) ref.Val {
	if k, ok := key.(types.String); ok {
		return types.Bool(o.index(string(k)) >= 0)
	}
	return o.whole().Contains(key)
}

// Size implements traits.Sizer.
func (o *jsonObject) Size() ref.Val { return types.Int(len(o.kvs)) }

// IsZeroValue reports an empty object, as cel-go's maps do.
func (o *jsonObject) IsZeroValue() bool { return len(o.kvs) == 0 }

func (o *jsonObject) Iterator() traits.Iterator { return o.whole().Iterator() }

func (o *jsonObject) Equal(other ref.Val) ref.Val { return o.whole().Equal(other) }

func (o *jsonObject) ConvertToNative(t reflect.Type) (any, error) {
	return o.whole().ConvertToNative(t)
}

func (o *jsonObject) ConvertToType(t ref.Type) ref.Val { return o.whole().ConvertToType(t) }

func (o *jsonObject) Type() ref.Type { return types.MapType }

func (o *jsonObject) Value() any { return o.whole().Value() }
