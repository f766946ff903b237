package format

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ValueType is the type of a GGUF metadata value, numbered as in the GGUF
// specification (gguf_type in ggml).
type ValueType uint32

// Metadata value types.
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

var valueTypeNames = [...]string{
	TypeUint8: "uint8", TypeInt8: "int8", TypeUint16: "uint16", TypeInt16: "int16",
	TypeUint32: "uint32", TypeInt32: "int32", TypeFloat32: "float32", TypeBool: "bool",
	TypeString: "string", TypeArray: "array", TypeUint64: "uint64", TypeInt64: "int64",
	TypeFloat64: "float64",
}

// String returns the type's name, e.g. "uint32", or "type(N)" for an
// unknown type.
func (t ValueType) String() string {
	if t.valid() {
		return valueTypeNames[t]
	}
	return "type(" + strconv.FormatUint(uint64(t), 10) + ")"
}

func (t ValueType) valid() bool { return t <= TypeFloat64 }

// width returns the encoded size in bytes of a scalar of type t, or 0 for
// strings, arrays and unknown types.
func (t ValueType) width() int {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	}
	return 0
}

// minSize returns the fewest bytes one encoded value of type t occupies:
// the scalar width, 8 for a string (its length) and 12 for an array (its
// element type and length).
func (t ValueType) minSize() int {
	switch t {
	case TypeString:
		return 8
	case TypeArray:
		return 12
	}
	return t.width()
}

func (t ValueType) signed() bool {
	return t == TypeInt8 || t == TypeInt16 || t == TypeInt32 || t == TypeInt64
}

func (t ValueType) unsigned() bool {
	return t == TypeUint8 || t == TypeUint16 || t == TypeUint32 || t == TypeUint64
}

// Value is one metadata value: a scalar, a string or an array. Arrays hold
// their elements compactly in a typed slice (a []string, a []float32, ...),
// except arrays of arrays, which hold one Value per element.
//
// The zero Value is the uint8 0. Values are created by ReadGGUF or by the
// constructors such as StringValue and Float32sValue.
type Value struct {
	typ  ValueType
	elem ValueType // element type when typ == TypeArray
	num  uint64    // integers (sign-extended), float64 bits, or 0/1 for bool
	str  string
	arr  any // []uint8, []int8, ..., []string, []Value (arrays of arrays)
}

// Scalar constructors.

// Uint8Value returns a uint8 Value.
func Uint8Value(x uint8) Value { return Value{typ: TypeUint8, num: uint64(x)} }

// Int8Value returns an int8 Value.
func Int8Value(x int8) Value { return Value{typ: TypeInt8, num: uint64(int64(x))} }

// Uint16Value returns a uint16 Value.
func Uint16Value(x uint16) Value { return Value{typ: TypeUint16, num: uint64(x)} }

// Int16Value returns an int16 Value.
func Int16Value(x int16) Value { return Value{typ: TypeInt16, num: uint64(int64(x))} }

// Uint32Value returns a uint32 Value.
func Uint32Value(x uint32) Value { return Value{typ: TypeUint32, num: uint64(x)} }

// Int32Value returns an int32 Value.
func Int32Value(x int32) Value { return Value{typ: TypeInt32, num: uint64(int64(x))} }

// Uint64Value returns a uint64 Value.
func Uint64Value(x uint64) Value { return Value{typ: TypeUint64, num: x} }

// Int64Value returns an int64 Value.
func Int64Value(x int64) Value { return Value{typ: TypeInt64, num: uint64(x)} }

// Float32Value returns a float32 Value.
func Float32Value(x float32) Value {
	return Value{typ: TypeFloat32, num: math.Float64bits(float64(x))}
}

// Float64Value returns a float64 Value.
func Float64Value(x float64) Value { return Value{typ: TypeFloat64, num: math.Float64bits(x)} }

// BoolValue returns a bool Value.
func BoolValue(x bool) Value {
	v := Value{typ: TypeBool}
	if x {
		v.num = 1
	}
	return v
}

// StringValue returns a string Value.
func StringValue(s string) Value { return Value{typ: TypeString, str: s} }

// Array constructors. The Value keeps the slice it is given; do not modify
// it afterwards.

func arrayValue(elem ValueType, a any) Value { return Value{typ: TypeArray, elem: elem, arr: a} }

// Uint8sValue returns an array of uint8.
func Uint8sValue(a []uint8) Value { return arrayValue(TypeUint8, a) }

// Int8sValue returns an array of int8.
func Int8sValue(a []int8) Value { return arrayValue(TypeInt8, a) }

// Uint16sValue returns an array of uint16.
func Uint16sValue(a []uint16) Value { return arrayValue(TypeUint16, a) }

// Int16sValue returns an array of int16.
func Int16sValue(a []int16) Value { return arrayValue(TypeInt16, a) }

// Uint32sValue returns an array of uint32.
func Uint32sValue(a []uint32) Value { return arrayValue(TypeUint32, a) }

// Int32sValue returns an array of int32.
func Int32sValue(a []int32) Value { return arrayValue(TypeInt32, a) }

// Uint64sValue returns an array of uint64.
func Uint64sValue(a []uint64) Value { return arrayValue(TypeUint64, a) }

// Int64sValue returns an array of int64.
func Int64sValue(a []int64) Value { return arrayValue(TypeInt64, a) }

// Float32sValue returns an array of float32.
func Float32sValue(a []float32) Value { return arrayValue(TypeFloat32, a) }

// Float64sValue returns an array of float64.
func Float64sValue(a []float64) Value { return arrayValue(TypeFloat64, a) }

// BoolsValue returns an array of bool.
func BoolsValue(a []bool) Value { return arrayValue(TypeBool, a) }

// StringsValue returns an array of strings.
func StringsValue(a []string) Value { return arrayValue(TypeString, a) }

// ArraysValue returns an array of arrays. Every element must itself be an
// array (of any element type); WriteGGUF rejects the value otherwise.
func ArraysValue(a ...Value) Value { return arrayValue(TypeArray, a) }

// Accessors.

// Type returns the value's type.
func (v Value) Type() ValueType { return v.typ }

// Uint returns the value of any integer type as a uint64. It reports false
// for non-integers and negative integers.
func (v Value) Uint() (uint64, bool) {
	switch {
	case v.typ.unsigned():
		return v.num, true
	case v.typ.signed() && int64(v.num) >= 0:
		return v.num, true
	}
	return 0, false
}

// Int returns the value of any integer type as an int64. It reports false
// for non-integers and unsigned values above math.MaxInt64.
func (v Value) Int() (int64, bool) {
	switch {
	case v.typ.signed():
		return int64(v.num), true
	case v.typ.unsigned() && v.num <= math.MaxInt64:
		return int64(v.num), true
	}
	return 0, false
}

// Float returns the value of a float or integer type as a float64.
func (v Value) Float() (float64, bool) {
	switch {
	case v.typ == TypeFloat32 || v.typ == TypeFloat64:
		return math.Float64frombits(v.num), true
	case v.typ.signed():
		return float64(int64(v.num)), true
	case v.typ.unsigned():
		return float64(v.num), true
	}
	return 0, false
}

// Bool returns the value of a bool.
func (v Value) Bool() (bool, bool) { return v.num != 0, v.typ == TypeBool }

// Str returns the value of a string.
func (v Value) Str() (string, bool) { return v.str, v.typ == TypeString }

// Len returns the number of elements of an array, or 0 for a non-array.
func (v Value) Len() int {
	switch a := v.arr.(type) {
	case []uint8:
		return len(a)
	case []int8:
		return len(a)
	case []uint16:
		return len(a)
	case []int16:
		return len(a)
	case []uint32:
		return len(a)
	case []int32:
		return len(a)
	case []uint64:
		return len(a)
	case []int64:
		return len(a)
	case []float32:
		return len(a)
	case []float64:
		return len(a)
	case []bool:
		return len(a)
	case []string:
		return len(a)
	case []Value:
		return len(a)
	}
	return 0
}

// ElemType returns the element type of an array. It is meaningless for a
// non-array.
func (v Value) ElemType() ValueType { return v.elem }

// Index returns element i of an array. Like indexing a slice, it panics if
// v is not an array or i is out of range.
func (v Value) Index(i int) Value {
	switch a := v.arr.(type) {
	case []uint8:
		return Uint8Value(a[i])
	case []int8:
		return Int8Value(a[i])
	case []uint16:
		return Uint16Value(a[i])
	case []int16:
		return Int16Value(a[i])
	case []uint32:
		return Uint32Value(a[i])
	case []int32:
		return Int32Value(a[i])
	case []uint64:
		return Uint64Value(a[i])
	case []int64:
		return Int64Value(a[i])
	case []float32:
		return Float32Value(a[i])
	case []float64:
		return Float64Value(a[i])
	case []bool:
		return BoolValue(a[i])
	case []string:
		return StringValue(a[i])
	case []Value:
		return a[i]
	}
	panic("format: Index of a non-array " + v.typ.String() + " Value")
}

// Strings returns the elements of an array of strings. The slice is shared
// with v and must not be modified.
func (v Value) Strings() ([]string, bool) {
	a, ok := v.arr.([]string)
	return a, ok
}

// Float32s returns the elements of an array of float32. The slice is shared
// with v and must not be modified.
func (v Value) Float32s() ([]float32, bool) {
	a, ok := v.arr.([]float32)
	return a, ok
}

// Int32s returns the elements of an array of any integer type as int32s.
// It reports false if v is not an integer array or an element does not fit
// in an int32. For an int32 array the slice is shared with v and must not be
// modified; otherwise it is a new slice.
func (v Value) Int32s() ([]int32, bool) {
	switch a := v.arr.(type) {
	case []int32:
		return a, true
	case []int8:
		return convertInts(a)
	case []uint8:
		return convertInts(a)
	case []int16:
		return convertInts(a)
	case []uint16:
		return convertInts(a)
	case []uint32:
		return convertInts(a)
	case []int64:
		return convertInts(a)
	case []uint64:
		return convertInts(a)
	}
	return nil, false
}

func convertInts[T int8 | uint8 | int16 | uint16 | uint32 | int64 | uint64](a []T) ([]int32, bool) {
	out := make([]int32, len(a))
	for i, x := range a {
		if int32(x) < 0 != (x < 0) || T(int32(x)) != x {
			return nil, false
		}
		out[i] = int32(x)
	}
	return out, true
}

// maxPrinted is the number of array elements String prints.
const maxPrinted = 8

// String formats v for people: numbers as Go prints them, strings quoted,
// and arrays as [a, b, ...] with at most a few elements followed by the
// total count.
func (v Value) String() string {
	var b strings.Builder
	v.format(&b)
	return b.String()
}

func (v Value) format(b *strings.Builder) {
	switch {
	case v.typ == TypeArray:
		n := v.Len()
		b.WriteByte('[')
		for i := 0; i < n && i < maxPrinted; i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			v.Index(i).format(b)
		}
		if n > maxPrinted {
			fmt.Fprintf(b, ", ... (%d %s elements)", n, v.elem)
		}
		b.WriteByte(']')
	case v.typ == TypeString:
		b.WriteString(strconv.Quote(v.str))
	case v.typ == TypeBool:
		b.WriteString(strconv.FormatBool(v.num != 0))
	case v.typ == TypeFloat32:
		b.WriteString(strconv.FormatFloat(math.Float64frombits(v.num), 'g', -1, 32))
	case v.typ == TypeFloat64:
		b.WriteString(strconv.FormatFloat(math.Float64frombits(v.num), 'g', -1, 64))
	case v.typ.signed():
		b.WriteString(strconv.FormatInt(int64(v.num), 10))
	default:
		b.WriteString(strconv.FormatUint(v.num, 10))
	}
}
