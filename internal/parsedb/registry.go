package parsedb

import (
	"reflect"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// commandRegistry is the driver's default BSON registry with one change:
// slices of values (bson.A, []any, []string, []bson.D — every filter,
// pipeline and $in list this package builds) are encoded element by element
// without the default slice codec's test of whether the slice converts to a
// bson.D. That test (reflect's ConvertibleTo, which compares type names as
// strings) ran for every array of every command and was the largest single
// cost of encoding one: ~20 µs of a count's server CPU
// (docs/performance.md "The driver floor, third pass"). The bytes are the
// same (TestCommandRegistryEncodesAsDefault).
var commandRegistry = func() *bson.Registry {
	r := bson.NewRegistry()
	enc := bson.ValueEncoderFunc(encodeArray)
	for _, t := range []reflect.Type{reflect.TypeFor[bson.A](), reflect.TypeFor[[]any](), reflect.TypeFor[[]string](), reflect.TypeFor[[]bson.D]()} {
		r.RegisterTypeEncoder(t, enc)
	}
	return r
}()

// encodeArray writes a slice as a BSON array (nil as null, as the default
// codec does), each element with the registry's encoder of its own type.
func encodeArray(ec bson.EncodeContext, vw bson.ValueWriter, val reflect.Value) error {
	if val.IsNil() {
		return vw.WriteNull()
	}
	aw, err := vw.WriteArray()
	if err != nil {
		return err
	}
	for i := range val.Len() {
		ew, err := aw.WriteArrayElement()
		if err != nil {
			return err
		}
		e := val.Index(i)
		if e.Kind() == reflect.Interface {
			if e.IsNil() {
				if err := ew.WriteNull(); err != nil {
					return err
				}
				continue
			}
			e = e.Elem()
		}
		enc, err := ec.LookupEncoder(e.Type())
		if err != nil {
			return err
		}
		if err := enc.EncodeValue(ec, ew, e); err != nil {
			return err
		}
	}
	return aw.WriteArrayEnd()
}
