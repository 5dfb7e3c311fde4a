package kernel

import (
	"reflect"
	"strings"
	"testing"

	"github.com/glancelab/attention/internal/impl"
	"github.com/glancelab/attention/internal/kernels"
	"github.com/glancelab/attention/internal/testutil"
)

// The traits in use are the table's for the implementation selected
// (zero for the generic code), and traits mirrors kernels.Traits field
// for field, so that no trait of the table goes without its data here.
func TestTraitsMatchTable(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		im, _ := kernels.Named(impl.Active())
		if err := sameTraits(reflect.ValueOf(im.Traits), reflect.ValueOf(*activeTraits()), "traits"); err != "" {
			t.Error(err)
		}
	})
}

// sameTraits compares a value of the table's types with its mirror here,
// whose names are the table's with their first letter lower case.
func sameTraits(want, got reflect.Value, path string) string {
	if want.Kind() != got.Kind() {
		return path + ": a " + got.Type().String() + " here, a " + want.Type().String() + " in the table"
	}
	switch want.Kind() {
	case reflect.Struct:
		if want.NumField() != got.NumField() {
			return path + ": fields differ in number from the table's " + want.Type().String()
		}
		for i := range want.NumField() {
			name := want.Type().Field(i).Name
			g := got.FieldByName(strings.ToLower(name[:1]) + name[1:])
			if !g.IsValid() {
				return path + ": no field for the table's " + name
			}
			if err := sameTraits(want.Field(i), g, path+"."+name); err != "" {
				return err
			}
		}
	case reflect.Slice:
		if want.Len() != got.Len() {
			return path + ": length differs from the table's"
		}
		for i := range want.Len() {
			if err := sameTraits(want.Index(i), got.Index(i), path+"[]"); err != "" {
				return err
			}
		}
	case reflect.Bool:
		if want.Bool() != got.Bool() {
			return path + ": differs from the table's"
		}
	case reflect.Int:
		if want.Int() != got.Int() {
			return path + ": differs from the table's"
		}
	default:
		return path + ": a " + want.Kind().String() + ", which this test does not compare"
	}
	return ""
}
