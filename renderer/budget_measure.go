package renderer

import (
	"reflect"
)

// Measuring values: what printing or encoding a value would produce, in
// bytes and depth, counted before it is done, so a value that would print
// to gigabytes stops the render instead.

type measureError string

func (e measureError) Error() string { return string(e) }

const (
	errTooDeep  = measureError("too deep")
	errTooLarge = measureError("too large")
)

// measurer walks a value the way a printer or encoder would, counting
// bytes (a string its length, anything else a word) until left runs out.
type measurer struct{ left int64 }

func (m *measurer) take(n int) error {
	m.left -= int64(n)
	if m.left < 0 {
		return errTooLarge
	}
	return nil
}

// measure walks the plain trees templates build (maps of any, lists of
// any) without reflection; anything else by reflection.
func (m *measurer) measure(v any, depth int) error {
	if depth > MaxValueDepth {
		return errTooDeep
	}
	switch x := v.(type) {
	case nil, bool, int, int64, float64:
		return m.take(8)
	case string:
		return m.take(len(x) + 2)
	case map[string]any:
		if err := m.take(16); err != nil {
			return err
		}
		for k, e := range x {
			if err := m.take(len(k) + 2); err != nil {
				return err
			}
			if err := m.measure(e, depth+1); err != nil {
				return err
			}
		}
		return nil
	case []any:
		if err := m.take(16); err != nil {
			return err
		}
		for _, e := range x {
			if err := m.measure(e, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return m.reflect(reflect.ValueOf(v), depth)
}

func (m *measurer) reflect(v reflect.Value, depth int) error {
	if depth > MaxValueDepth {
		return errTooDeep
	}
	switch v.Kind() {
	case reflect.Invalid:
		return m.take(8)
	case reflect.String:
		return m.take(v.Len() + 2)
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			return m.take(8)
		}
		if e := v.Elem(); e.CanInterface() {
			return m.measure(e.Interface(), depth+1)
		}
		return m.reflect(v.Elem(), depth+1)
	case reflect.Map:
		if err := m.take(16); err != nil {
			return err
		}
		for it := v.MapRange(); it.Next(); {
			if err := m.reflect(it.Key(), depth+1); err != nil {
				return err
			}
			if err := m.reflect(it.Value(), depth+1); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return m.take(v.Len() + 16)
		}
		if err := m.take(16); err != nil {
			return err
		}
		for i := range v.Len() {
			if err := m.reflect(v.Index(i), depth+1); err != nil {
				return err
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if err := m.reflect(v.Field(i), depth+1); err != nil {
				return err
			}
		}
	default:
		return m.take(8)
	}
	return nil
}
